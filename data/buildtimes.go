package data

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// buildTimes is where a build's time goes, logged as one line when it
// ends ("data: build timing"). The first four are summed over the
// goroutines that do them (reading runs beside tokenizing, so they add up
// to more than the wall time on several cores); the rest are wall times of
// phases that run one after another.
type buildTimes struct {
	read     atomic.Int64 // parsing the sources, not counting waits for a free worker
	encode   atomic.Int64 // tokenizer.Encode, and chunking
	check    atomic.Int64 // decoding each chunk back and comparing (the round-trip check)
	spool    atomic.Int64 // moving texts and ids to the spool
	bytes    atomic.Int64 // text bytes tokenized
	tokenize time.Duration
	split    time.Duration // rejections, dedup, assignSplits
	docs     time.Duration // writing docs.arrow
	tokens   time.Duration // writing tokens.arrow
	sums     time.Duration // checksumming the files, writing report.json
}

// since adds the time since start to d.
func since(d *atomic.Int64, start time.Time) { d.Add(int64(time.Since(start))) }

// log writes the timing line; total is the build's wall time.
func (t *buildTimes) log(total time.Duration) {
	sec := func(ns int64) float64 { return time.Duration(ns).Seconds() }
	mb := float64(t.bytes.Load()) / 1e6
	slog.Info("data: build timing", "text_mb", mb, "seconds", total.Seconds(), "mb_per_s", mb/max(total.Seconds(), 1e-9),
		"tokenize_wall", t.tokenize.Seconds(), "read_cpu", sec(t.read.Load()), "encode_cpu", sec(t.encode.Load()),
		"check_cpu", sec(t.check.Load()), "spool_cpu", sec(t.spool.Load()),
		"split", t.split.Seconds(), "write_docs", t.docs.Seconds(), "write_tokens", t.tokens.Seconds(), "checksums", t.sums.Seconds())
}
