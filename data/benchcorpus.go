package data

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// BenchCorpusConfig describes a synthetic JSONL corpus for measuring the
// build (`memo bench corpus`): documents of about DocBytes (drawn between
// half and one and a half times it) until Bytes are written.
type BenchCorpusConfig struct {
	CacheDir string // where moby-dick, brown, sotu and kjv were fetched
	Bytes    int64  // stop after the document that reaches this size
	DocBytes int    // mean text length of a document
	Seed     int64
}

// benchMinParagraph is the shortest paragraph the corpus draws from:
// shorter ones are headings, verse numbers and the like.
const benchMinParagraph = 200

// benchMarkerWords is how many words separate two [n.j.i] markers, as
// issue 27 built its corpus. A marker is about 7 GPT-2 tokens and 20 words
// of prose about 25, so most windows of OverlapTokens tokens hold a
// document's number and no two documents share them however often a
// paragraph is drawn; but 20 words dense in tokens (names in capitals,
// figures) leave a window between two numbers, so some documents (one in
// ten of 23 KB) do share one with a target or control and are rejected,
// as in a real corpus: the check's confirmations are measured too.
const benchMarkerWords = 20

// WriteBenchCorpus writes a corpus of JSONL lines {"title": "doc N",
// "text": ...} to w: each document is words of randomly drawn paragraphs
// over benchMinParagraph characters from the fetched Moby-Dick, Brown,
// King James Bible and State of the Union corpora, paragraph breaks kept,
// with a marker [n.j.i] (document n, paragraph j, marker i) every
// benchMarkerWords words. The same config writes the same bytes. It
// returns the documents and bytes (of JSONL) written.
func WriteBenchCorpus(w io.Writer, cfg BenchCorpusConfig) (docs int, written int64, err error) {
	if cfg.Bytes < 1 || cfg.DocBytes < 1 {
		return 0, 0, fmt.Errorf("bench corpus: bytes %d and doc bytes %d must be >= 1", cfg.Bytes, cfg.DocBytes)
	}
	var paras [][]string // each paragraph's words
	for _, name := range []string{"moby-dick", "brown", "sotu", "kjv"} {
		src, _ := ParseSource(name)
		err := streamSource(src, cfg.CacheDir, func(d rawDoc) {
			for _, p := range strings.Split(d.Text, "\n\n") {
				if p = strings.TrimSpace(p); len(p) > benchMinParagraph {
					paras = append(paras, strings.Fields(p))
				}
			}
		}, func(Rejected) {})
		if err != nil {
			return 0, 0, fmt.Errorf("bench corpus: %w", err)
		}
	}
	rng := newSplitMix(uint64(cfg.Seed) ^ 0x62656e6368)
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countingWriter{w: bw}
	enc := json.NewEncoder(cw)
	enc.SetEscapeHTML(false)
	var text strings.Builder
	for n := 0; written < cfg.Bytes; n++ {
		want := cfg.DocBytes/2 + int(rng.below(uint64(cfg.DocBytes)+1))
		text.Reset()
		for j := 0; text.Len() < want; j++ {
			if j > 0 {
				text.WriteString("\n\n")
			}
			words := paras[rng.below(uint64(len(paras)))]
			for i, wd := range words {
				if i > 0 {
					text.WriteByte(' ')
				}
				if i%benchMarkerWords == 0 {
					text.WriteString("[" + strconv.Itoa(n) + "." + strconv.Itoa(j) + "." + strconv.Itoa(i/benchMarkerWords) + "] ")
				}
				text.WriteString(wd)
				if text.Len() >= want {
					break
				}
			}
		}
		line := struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		}{"doc " + strconv.Itoa(n), text.String()}
		if err := enc.Encode(line); err != nil {
			return docs, written, fmt.Errorf("bench corpus: %w", err)
		}
		docs++
		written = cw.n
	}
	if err := bw.Flush(); err != nil {
		return docs, written, fmt.Errorf("bench corpus: %w", err)
	}
	return docs, written, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
