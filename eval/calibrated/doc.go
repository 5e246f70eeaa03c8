// Package calibrated scores membership with reference models: each
// candidate document's signal on the target model is judged against what
// reference models trained with and without that document make of it, so
// a document that is easy for every model does not pass for a member.
// It is pure Go on float64 slices; the caller computes the signals.
//
// Inputs follow one layout throughout: for K reference models and N
// candidates, signal[k][j] is model k's value on candidate j and in[k][j]
// says whether model k trained on candidate j; target[j] is the target
// model's value. RMIA also takes M population samples z that no model
// trained on, popRef[k][m] and popTarget[m]. Every score is "higher means
// member", and a candidate the method cannot score is NaN.
//
//   - Assign draws in: models 2p and 2p+1 are complements, so each
//     candidate is IN for exactly K/2 models, and so is every even prefix
//     of the models (a K = 16 set gives the K = 2, 4, 8 rows).
//   - LiRAOnline, LiRAOffline: the likelihood-ratio attack of Carlini et
//     al. 2022, "Membership Inference Attacks From First Principles"
//     (arXiv 2112.03570), on a signal that LogitOfLogProb makes from the
//     log-probability of the whole scored sequence.
//   - RMIA: the attack of Zarifzadeh et al. 2024, "Low-Cost High-Power
//     Membership Inference Attacks" (arXiv 2312.03262), on probabilities.
//   - Counterfactual: the counterfactual memorization of Zhang et al.
//     2021, "Counterfactual Memorization in Neural Language Models"
//     (arXiv 2112.12938).
//
// # LiRA
//
// For candidate j, μin, σin and μout, σout are the mean and population
// standard deviation (divide by the count, as numpy's np.std) of the IN
// and OUT reference values. Online scores
// log N(t; μin, σin²) − log N(t; μout, σout²); offline scores the
// paper's one-sided test log Φ((t − μout)/σout), evaluated without
// cancellation in either tail. Online needs K >= 2; a candidate with no
// OUT value (online: or no IN value) is NaN. σ gets 1e-30 added, as
// Carlini et al.'s plot.py (tensorflow/privacy research/mi_lira_2021)
// does, so constant reference values give a finite score.
//
// With LiRAOptions.GlobalVariance every candidate shares one σin² and one
// σout²: the within-candidate variance pooled over the candidates with at
// least two values on that side, Σ_j Σ_k (x_kj − μ_j)² / Σ_j n_j. That is
// our choice. plot.py's fix_variance takes np.std of all values around
// their global mean, which for text, whose per-document means differ by
// nats, would measure the spread between documents instead of the noise
// of one; its online branch also uses the IN spread for σout. A candidate
// with one value on a side adds nothing to that side's pool: its one
// deviation is zero by construction. When no candidate has two (K = 1 or
// 2 with each candidate IN for half the models: one OUT value each),
// there is no within-candidate spread, and that side takes plot.py's
// np.std of all its values; the scores then rank candidates by the gap
// t − μ, where a σ of zero plus 1e-30 tied most of them at log Φ = 0.
//
// Where plot.py differs otherwise we follow the paper: μ is the mean
// (plot.py takes the median), every reference value counts (plot.py cuts
// every candidate to the smallest IN and OUT counts), and offline is the
// one-sided CDF (plot.py scores the two-sided Gaussian density). plot.py's
// signal is score.py's logit log p(y) − log Σ_{y'≠y} p(y'); for a whole
// sequence the analogue is log p − log(1 − p), LogitOfLogProb, with 1 − p
// floored at score.py's 1e-45 (a window every token of which is certain
// in float32 scores ln 1e45 ≈ 103.6, not +Inf). A value that is not
// finite all the same empties its side for its candidate (NaN score) and
// stays out of the shared variance. A target value of −Inf (a token of
// probability 0) scores online the ratio's limit (logRatio), offline
// log Φ(−Inf) = −Inf.
//
// Offline scores above z ≈ 38.5 are all −0: log Φ(z) is then closer to 0
// than the smallest float64, so such candidates tie. Only a candidate far
// above every OUT model reaches it, in practice a member; a control there
// would be flagged with them.
//
// # RMIA
//
// Pr(x|θ) is the target's probability of x, Pr(x) its average over
// reference models: online the mean over all K, offline
// ½((1+a)·mean_OUT + (1−a)), the paper's linear approximation from the
// OUT models alone. Population samples are OUT for every model, so Pr(z)
// is the mean over all K, and offline it gets the same a-approximation,
// as Privacy Meter's run_rmia does (privacytrustlab/ml_privacy_meter,
// attacks.py and modules/mia/attacks/rmia.py). Then
// LR(x, z) = (Pr(x|θ)/Pr(x)) / (Pr(z|θ)/Pr(z)) and the score is the
// fraction of the M samples z with LR(x, z) >= γ, as the paper writes it.
// Privacy Meter differs in two ways we do not follow: it counts LR > 1
// (strict, γ fixed at 1), and its masked sort keeps, for z, the largest
// K/2 of the K reference values instead of all of them. The versions we
// read have no online mode; ours is the paper's. The caller passes
// exp(mean token log-likelihood), the geometric-mean token probability,
// since whole-sequence probabilities underflow.
//
// # Counterfactual memorization
//
// The mean performance on x of the reference models that trained on x
// minus the mean of those that did not; with performance = mean token
// log-likelihood, higher means the document's own training helped more.
package calibrated
