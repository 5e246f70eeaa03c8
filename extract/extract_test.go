package extract

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/model"
)

func TestMemorizedDocumentsExtractExactly(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	docs := opticksDocs(t, 2, 96)
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 128, Seed: 7})
	rows := [][]int32{docs[0].IDs, docs[1].IDs}
	loss := memorize(t, g, rows, 600, 0.01)
	t.Logf("trained to loss %.4f in %v", loss, time.Since(start).Round(time.Millisecond))
	if loss > 0.05 {
		t.Fatalf("model did not memorize: loss %.4f", loss)
	}
	for _, mode := range []string{ModeReference, ModeFixed, ModePythia} {
		for _, dec := range []string{DecodeGreedy, DecodeBeam, DecodeSample} {
			cfg := DefaultConfig()
			cfg.Mode, cfg.Decoding, cfg.Prefix, cfg.Suffix, cfg.Beams = mode, dec, 30, 50, 3
			cfg.Temperature = 0.1 // a memorized model at low temperature samples its memory
			prompts := BuildPrompts(cfg, docs, g.Config().Context)
			for _, cache := range []bool{true, false} {
				gen, err := generateAll(context.Background(), g, cfg, prompts, cache)
				if err != nil {
					t.Fatal(err)
				}
				for i, p := range prompts {
					if p.Status != StatusOK {
						t.Fatalf("%s: %s not attacked: %s", mode, p.Doc.Title, p.Reason)
					}
					if !reflect.DeepEqual(gen[i], p.Suffix) {
						t.Errorf("%s/%s cache=%v: %s: generated %q, want %q", mode, dec, cache, p.Doc.Title, bytesOf(gen[i]), bytesOf(p.Suffix))
					}
				}
			}
		}
	}
	ls, err := windowLosses(context.Background(), g, BuildPrompts(DefaultConfig(), docs, 128), 2, "test")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range ls {
		mean, mink := eval.MeanLoss(l), eval.MinK(l, 0.2)
		if len(l) != len(docs[i].IDs)-1 || mean > 0.05 || mink < mean {
			t.Errorf("doc %d: %d losses, mean %.4f, mink %.4f: want %d, mean near the training loss, mink >= mean", i, len(l), mean, mink, len(docs[i].IDs)-1)
		}
	}
	t.Logf("whole test %v", time.Since(start).Round(time.Millisecond))
}

func bytesOf(ids []int32) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

// On an untrained model the argmax is fragile, so agreement is a strict
// test of the cache and of left padding: prompts of different lengths
// decoded in one batch, with and without the cache, and one at a time.
func TestCachedUncachedAndPaddedAgree(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	docs := opticksDocs(t, 4, 120)
	for i := range docs {
		docs[i].IDs = docs[i].IDs[:60+15*i]
	}
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 128, Seed: 3})
	cfg := DefaultConfig()
	cfg.Suffix = 20
	prompts := BuildPrompts(cfg, docs, 128)
	for _, dec := range []string{DecodeGreedy, DecodeBeam} {
		cfg.Decoding = dec
		cached, err := generateAll(context.Background(), g, cfg, prompts, true)
		if err != nil {
			t.Fatal(err)
		}
		uncached, err := generateAll(context.Background(), g, cfg, prompts, false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cached, uncached) {
			t.Errorf("%s: cached %v\nuncached %v", dec, cached, uncached)
		}
		one := cfg
		one.BatchSize = 1
		single, err := generateAll(context.Background(), g, one, prompts, true)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cached, single) {
			t.Errorf("%s: batched %v\none at a time %v", dec, cached, single)
		}
	}
}
