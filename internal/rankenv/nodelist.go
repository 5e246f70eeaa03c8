package rankenv

import (
	"fmt"
	"strconv"
	"strings"
)

// FirstHost returns the first host of a Slurm node list in its compressed
// syntax: "node[01-04,07],gpu3" → "node01". Zero padding is kept.
func FirstHost(list string) (string, error) {
	hosts, err := ExpandNodeList(list)
	if err != nil {
		return "", err
	}
	return hosts[0], nil
}

// ExpandNodeList expands a Slurm node list ("a[1-3],b[07,09-10]x,c") into
// host names, in order.
func ExpandNodeList(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return nil, fmt.Errorf("empty node list")
	}
	var out []string
	for _, item := range splitTop(list) {
		if item == "" {
			return nil, fmt.Errorf("node list %q: empty entry", list)
		}
		hs, err := expandItem(item)
		if err != nil {
			return nil, fmt.Errorf("node list %q: %w", list, err)
		}
		out = append(out, hs...)
	}
	return out, nil
}

// splitTop splits on commas outside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandItem expands one host pattern, which may hold several bracket
// groups ("rack[1-2]-n[01-02]").
func expandItem(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("%q: ']' without '['", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", item)
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	tails, err := expandItem(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, found := strings.Cut(r, "-")
		if !found {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if lo == "" || err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q: bad range %q (want N or N-M with N <= M)", item, r)
		}
		if b-a > 100000 {
			return nil, fmt.Errorf("%q: range %q too large", item, r)
		}
		for n := a; n <= b; n++ {
			num := fmt.Sprintf("%0*d", len(lo), n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}
