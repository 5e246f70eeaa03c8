package eval

import "github.com/memo-research/memo/eval/calibrated"

// The calibrated attacks (issue 37): computed from the run's
// mia_signals.parquet by package calibrated, NaN without one; higher
// means member. Their names are their scores.parquet columns and
// summary keys.
const (
	AttackLiRAOnline     = "lira_online"
	AttackLiRAOffline    = "lira_offline"
	AttackRMIA           = "rmia"
	AttackRMIAOffline    = "rmia_offline"
	AttackCounterfactual = "counterfactual_mem"
)

func init() {
	lira := func(x calibratedInput) calibrated.LiRAOptions {
		return calibrated.LiRAOptions{GlobalVariance: x.cfg.LiRAGlobalVariance}
	}
	rmia := func(x calibratedInput, offline bool) ([]float64, error) {
		ro := calibrated.RMIAOptions{Offline: offline, A: 1, Gamma: x.cfg.RMIAGamma}
		if offline {
			// mia.rmia_a, or the a chosen with the references (-1).
			a, err := x.m.offlineA(x.K, x.cfg)
			if err != nil {
				return nil, err
			}
			ro.A = a
		}
		return calibrated.RMIA(x.target(probSignal), x.refs(probSignal), x.in(), x.population(x.m.tgt), x.populationRefs(), ro)
	}
	for _, st := range []MIAStatistic{
		{Name: AttackLiRAOnline, Label: "LiRA online", Order: 80, Signals: func(x calibratedInput) ([]float64, error) {
			if x.K < 2 {
				return x.undefined(), nil
			}
			return calibrated.LiRAOnline(x.target(liraSignal), x.refs(liraSignal), x.in(), lira(x))
		}},
		{Name: AttackLiRAOffline, Label: "LiRA offline", Order: 90, Signals: func(x calibratedInput) ([]float64, error) {
			return calibrated.LiRAOffline(x.target(liraSignal), x.refs(liraSignal), x.in(), lira(x))
		}},
		{Name: AttackRMIA, Label: "RMIA", Order: 100, Signals: func(x calibratedInput) ([]float64, error) {
			if x.K < 2 {
				return x.undefined(), nil
			}
			return rmia(x, false)
		}},
		{Name: AttackRMIAOffline, Label: "RMIA offline", Order: 110, Signals: func(x calibratedInput) ([]float64, error) {
			return rmia(x, true)
		}},
		{Name: AttackCounterfactual, Label: "counterfactual memorization", Order: 120, Signals: func(x calibratedInput) ([]float64, error) {
			if x.K < 2 {
				return x.undefined(), nil
			}
			return calibrated.Counterfactual(x.refs(meanSignal), x.in())
		}},
	} {
		st.HigherMember, st.Needs = true, NeedSignals
		RegisterMIAStatistic(st)
	}
}
