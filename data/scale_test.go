package data

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The data scale benchmark (issue 16): MEMO_BENCH_DATA_MB=1024 go test
// -run TestScaleBench -timeout 2h ./data/ generates a JSONL corpus of that
// many MB from the fetched corpora (in MEMO_BENCH_DIR, kept for reruns, or
// a temporary directory), builds it as the standard setting would (GPT-2
// tokenizer, 2,000 targets x 50, 2,000 controls, all the rest background)
// and streams one epoch of its training rows, each in a child process, and
// logs MB/s and each child's peak RSS; MEMO_BENCH_TRAINROWS=1 adds the
// epoch made whole by TrainRows, for comparison. Not part of the default
// suite.

// scaleConfig is the standard setting's data section on the corpus in dir.
func scaleConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.Sources = []string{"jsonl:" + filepath.Join(dir, "corpus")}
	cfg.Tokenizer = "gpt2"
	cfg.Targets, cfg.Controls, cfg.Validation, cfg.Repetitions = 2000, 2000, 100, 50
	cfg.ChunkTokens, cfg.MinTokens, cfg.DedupWords = 0, 100, 0
	cfg.CacheDir = filepath.Join(dir, "cache")
	return cfg
}

// scaleBlock is the row length of the streamed epoch.
const scaleBlock = 128

func TestScaleBench(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("MEMO_BENCH_DATA_MB"))
	if mb <= 0 {
		t.Skip("set MEMO_BENCH_DATA_MB (e.g. 1024) to run the data scale benchmark")
	}
	needFetched(t, "gpt2")
	dir := os.Getenv("MEMO_BENCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	bytes := writeScaleCorpus(t, filepath.Join(dir, "corpus"), int64(mb)<<20)
	// The generated corpus's tokenizer files come from the user's cache.
	if err := os.MkdirAll(filepath.Join(dir, "cache", "corpora"), 0o755); err != nil {
		t.Fatal(err)
	}
	gpt2 := filepath.Join(dir, "cache", "corpora", "gpt2")
	if _, err := os.Lstat(gpt2); err != nil {
		if err := os.Symlink(filepath.Join(fetchedCache(), "corpora", "gpt2"), gpt2); err != nil {
			t.Fatal(err)
		}
	}
	run := filepath.Join(dir, "run")
	phases := []string{"build", "stream"}
	if os.Getenv("MEMO_BENCH_TRAINROWS") != "" {
		phases = append(phases, "trainrows") // the materialized epoch, for comparison
	}
	for _, phase := range phases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestScaleBenchChild$", "-test.count=1", "-test.timeout=2h", "-test.v")
		cmd.Env = append(os.Environ(), "MEMO_BENCH_DATA_CHILD="+phase, "MEMO_BENCH_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", phase, err, tail(string(out), 3000))
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		var line string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "RESULT ") {
				line = strings.TrimSpace(l[strings.Index(l, "RESULT ")+7:])
			}
		}
		t.Logf("%s: %s; peak RSS %.0f MB; user %.0f s, system %.0f s", phase, line, float64(ru.Maxrss)/1024,
			time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds())
	}
	_ = run
	t.Logf("corpus %.0f MB of JSONL in %s", float64(bytes)/(1<<20), filepath.Join(dir, "corpus"))
}

// TestScaleBenchChild is one phase of TestScaleBench in its own process.
func TestScaleBenchChild(t *testing.T) {
	phase, dir := os.Getenv("MEMO_BENCH_DATA_CHILD"), os.Getenv("MEMO_BENCH_DIR")
	if phase == "" {
		t.Skip("a child process of TestScaleBench")
	}
	cfg := scaleConfig(dir)
	run := filepath.Join(dir, "run")
	corpusBytes := dirSize(filepath.Join(dir, "corpus"))
	start := time.Now()
	switch phase {
	case "build":
		if err := Build(context.Background(), cfg, run); err != nil {
			t.Fatal(err)
		}
		s := time.Since(start).Seconds()
		ds, err := Open(run)
		if err != nil {
			t.Fatal(err)
		}
		rep := ds.Report()
		fmt.Printf("RESULT %.0f MB in %.0f s = %.1f MB/s; %d documents (target %d, control %d, background %d), %d rejected, %d training tokens\n",
			float64(corpusBytes)/(1<<20), s, float64(corpusBytes)/(1<<20)/s, rep.Sources[cfg.Sources[0]].Documents,
			rep.Splits[SplitTarget], rep.Splits[SplitControl], rep.Splits[SplitBackground], len(rep.Rejected), rep.TrainTokens)
	case "trainrows":
		// For comparison: the epoch made whole, as TrainRows makes it.
		ds, err := Open(run)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ds.TrainRows(scaleBlock, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		s := time.Since(start).Seconds()
		fmt.Printf("RESULT TrainRows: %d rows in %.1f s\n", len(rows), s)
	case "stream":
		ds, err := Open(run)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ds.Stream(scaleBlock, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		ready := time.Since(start).Seconds()
		row := make([]int32, scaleBlock+1)
		var tokens int64
		for i := 0; i < st.Len(); i++ {
			if err := st.Row(i, row); err != nil {
				t.Fatal(err)
			}
			for _, id := range row {
				if id != PadID {
					tokens++
				}
			}
		}
		s := time.Since(start).Seconds()
		mbRows := float64(st.Len()) * float64(scaleBlock+1) * 4 / (1 << 20)
		fmt.Printf("RESULT one epoch: %d rows of %d ids (%d tokens, %.0f MB of rows) in %.1f s (%.1f s to open) = %.0f MB/s of rows\n",
			st.Len(), scaleBlock+1, tokens, mbRows, s, ready, mbRows/s)
	}
}

// writeScaleCorpus writes JSONL files of 128 MB under dir until they hold
// size bytes, unless they are there already; it returns their size.
// Documents are the fetched corpora's (Brown files, Moby-Dick chapters,
// State of the Union speeches, KJV chapters, Opticks cut at blank lines
// into pieces of about 4 KB), copy c titled "cC ..." and opened by a line
// naming the copy, so that every document is distinct.
func writeScaleCorpus(t *testing.T, dir string, size int64) int64 {
	if n := dirSize(dir); n >= size {
		return n
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var docs [][2]string
	for _, name := range BuiltinSources {
		if name != "opticks" && !fetched(t, name) {
			continue
		}
		raws, _, err := loadSource(Source{Kind: name}, fetchedCache())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range raws {
			for k, piece := range pieces(r.Text, 4096) {
				docs = append(docs, [2]string{fmt.Sprintf("%s %s #%d", name, r.Title, k), piece})
			}
		}
	}
	var written int64
	var f *os.File
	var w *bufio.Writer
	closeFile := func() {
		if f != nil {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for c, part := 0, 0; written < size; c++ {
		for _, d := range docs {
			if written >= int64(part)*(128<<20) {
				closeFile()
				var err error
				if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("part-%03d.jsonl", part))); err != nil {
					t.Fatal(err)
				}
				w = bufio.NewWriterSize(f, 1<<20)
				part++
			}
			raw, _ := json.Marshal(map[string]string{"title": fmt.Sprintf("c%d %s", c, d[0]), "text": fmt.Sprintf("Copy %d.\n%s", c, d[1])})
			n, _ := w.Write(append(raw, '\n'))
			written += int64(n)
		}
	}
	closeFile()
	return dirSize(dir)
}

// pieces cuts text at blank lines into pieces of about n bytes.
func pieces(text string, n int) []string {
	var out []string
	var cur strings.Builder
	for _, p := range strings.Split(text, "\n\n") {
		if cur.Len() > 0 && cur.Len()+len(p) > n {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(p)
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}

func dirSize(dir string) int64 {
	files, _ := walkFiles(dir, isJSONLName)
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
