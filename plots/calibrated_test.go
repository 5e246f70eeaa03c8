package plots

import (
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
)

// TestCalibratedMarkdownHeader: calibrated.md's header counts the members
// and controls attacked, as summary.json's mia does, beside the table's
// rows over the same documents; it read "8 candidates (2 members)", the
// candidates the references scored beside the members attacked, when
// extract.max_docs = 2 attacked 2 of 4 targets and 2 of 4 controls.
func TestCalibratedMarkdownHeader(t *testing.T) {
	at := eval.CalibratedAUC{AUC: 1, TPR0_1: 1, TPR1: 1, NMembers: 2, NControls: 2}
	attacks := map[string]eval.CalibratedAUC{}
	for _, a := range eval.CalibratedAttacks() {
		attacks[a.Name] = at
	}
	sum := &eval.Summary{
		MIA: eval.MIASummary{NMembers: 2, NControls: 2},
		Calibrated: &eval.CalibratedSummary{References: 2, Candidates: 8, Population: 3,
			ByReferences: []eval.CalibratedAtK{{K: 2, Attacks: attacks}}},
	}
	var b strings.Builder
	if err := writeCalibratedMarkdown(&b, []*runData{{Name: "run", Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(b.String(), "\n")
	if want := "run: 2 members, 2 controls, 3 population samples;"; !strings.HasPrefix(head, want) {
		t.Errorf("header %q, want it to start %q", head, want)
	}
	if !strings.Contains(b.String(), "| lira_online | 2 | 1.000 | 100.0 | 100.0 | 2, 2 |") {
		t.Errorf("no lira_online row over 2, 2:\n%s", b.String())
	}
}
