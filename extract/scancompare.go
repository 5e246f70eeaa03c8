package extract

import (
	"fmt"
	"slices"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

// ScanAgreement is how a scan compares with a greedy attack's completions
// of the same documents: Compared documents were attacked in both, Exact
// of them reproduced exactly by generation, and Differ lists the doc_ids
// whose matched length or exact match the scan got otherwise, with the
// scan's margins there (runfiles.ScanRow.Margin; NaN from a scan written
// before margins were recorded). AsNear counts the compared documents
// whose margin is at most the largest of Differ's: how many verdicts were
// as close to a tie as the ones that parted.
type ScanAgreement struct {
	Compared, Exact int
	Differ          []int64
	DifferMargins   []float32
	AsNear          int
}

// CompareScan checks a scan against completions of the same attack:
// every document attacked in both must have the scan's matched length
// equal to the common prefix of the generated and true suffixes. A
// document whose prompt differs (other prefix or suffix lengths) means
// another attack: bad input, as is having no document in common.
func CompareScan(scan []runfiles.ScanRow, comps []runfiles.Completion) (ScanAgreement, error) {
	byDoc := make(map[int64]runfiles.ScanRow, len(scan))
	for _, r := range scan {
		byDoc[r.DocID] = r
	}
	var a ScanAgreement
	var margins []float32 // of every compared document
	for _, c := range comps {
		r, ok := byDoc[c.DocID]
		if !ok || c.Status != StatusOK || r.Status != StatusOK {
			continue
		}
		if r.PrefixLen != len(c.Prefix) || r.SuffixLen != len(c.Suffix) {
			return a, badinput.Errorf("document %d: the scan's prompt is %d + %d tokens, the completions' %d + %d: not the same attack", c.DocID, r.PrefixLen, r.SuffixLen, len(c.Prefix), len(c.Suffix))
		}
		m := commonPrefix(c.Generated, c.Suffix)
		if m == len(c.Suffix) {
			a.Exact++
		}
		if r.MatchedLen != m || r.ExactMatch != (m == len(c.Suffix)) {
			a.Differ = append(a.Differ, c.DocID)
			a.DifferMargins = append(a.DifferMargins, r.Margin)
		}
		margins = append(margins, r.Margin)
		a.Compared++
	}
	if a.Compared == 0 {
		return a, badinput.Errorf("no attacked document in common: not the same attack")
	}
	if len(a.DifferMargins) > 0 {
		worst := slices.Max(a.DifferMargins)
		for _, x := range margins {
			if x <= worst {
				a.AsNear++
			}
		}
	}
	return a, nil
}

// CompareScanFile is CompareScan of the scan file at path.
func CompareScanFile(path string, comps []runfiles.Completion) (ScanAgreement, error) {
	rows, err := runfiles.Scans.ReadParquet(path)
	if err != nil {
		return ScanAgreement{}, fmt.Errorf("read scan %s: %w", path, err)
	}
	return CompareScan(rows, comps)
}

// String is the agreement in one line.
func (a ScanAgreement) String() string {
	s := fmt.Sprintf("%d documents compared, %d exact by generation, %d differ", a.Compared, a.Exact, len(a.Differ))
	if n := len(a.Differ); n > 0 {
		s += fmt.Sprintf(" (doc_ids %v, the scan's margins there %v logits; %d of %d documents' verdicts were as near a tie)",
			a.Differ[:min(n, 10)], a.DifferMargins[:min(n, 10)], a.AsNear, a.Compared)
	}
	return s
}

// commonPrefix is how many leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
