package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/train/dpaccount"
)

func dpEpsilonCommand() *cli.Command {
	return &cli.Command{
		Name:  "dp-epsilon",
		Usage: "print the ε of DP-SGD for a sample rate, noise multiplier, step count and δ, or the noise a target ε needs",
		Description: "Runs the RDP accountant of the sampled Gaussian mechanism (Mironov et al. 2019)\n" +
			"with Opacus's orders and conversion, without training: the ε DP-SGD spends\n" +
			"after --steps steps that each draw every example with probability\n" +
			"--sample-rate (Poisson sampling) and add noise of --noise times the clipping\n" +
			"norm. With --target-epsilon instead of --noise it prints the noise multiplier\n" +
			"whose ε is at most the target and within 1 % of it (Opacus's search).\n" +
			"Example: memo dp-epsilon --sample-rate 0.04 --noise 1.5 --steps 2250 --delta 1e-5 --json",
		Flags: []cli.Flag{
			&cli.Float64Flag{Name: "sample-rate", Usage: "`Q`, the probability that a step draws each example, in (0, 1] (1: no subsampling)", DefaultText: "required"},
			&cli.Float64Flag{Name: "noise", Usage: "`SIGMA`, the noise multiplier: the noise's standard deviation over the clipping norm, > 0 (or --target-epsilon)", DefaultText: "none"},
			&cli.Int64Flag{Name: "steps", Usage: "`T`, the number of noised steps, >= 1", DefaultText: "required"},
			&cli.Float64Flag{Name: "delta", Usage: "`D`, the δ of (ε, δ)-DP, in (0, 1); usually below 1/N for N examples", DefaultText: "required"},
			&cli.Float64Flag{Name: "target-epsilon", Usage: "`E`: print the noise multiplier that reaches ε = E instead of the ε of --noise", DefaultText: "none"},
			&cli.BoolFlag{Name: "json", Usage: `print {"epsilon": ...} (and "noise_multiplier" with --target-epsilon) as JSON`},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("dp-epsilon: takes no arguments (got %q)", c.Args().Slice())
			}
			for _, f := range []string{"sample-rate", "steps", "delta"} {
				if !c.IsSet(f) {
					return usageError("dp-epsilon: --%s is required", f)
				}
			}
			if c.IsSet("noise") == c.IsSet("target-epsilon") {
				return usageError("dp-epsilon: give exactly one of --noise and --target-epsilon")
			}
			q, steps, delta := c.Float64("sample-rate"), c.Int64("steps"), c.Float64("delta")
			if err := checkDPArgs(q, steps, delta); err != nil {
				return usageError("dp-epsilon: %v", err)
			}
			var out dpEpsilonOutput
			if c.IsSet("target-epsilon") {
				target := c.Float64("target-epsilon")
				if !(target > 0) || math.IsInf(target, 0) {
					return usageError("dp-epsilon: --target-epsilon %v: must be > 0 and finite", target)
				}
				sigma, err := dpaccount.NoiseFor(target, q, steps, delta)
				if errors.Is(err, dpaccount.ErrUnreachable) {
					return usageError("dp-epsilon: %v (the accountant's orders stop at 63, which bounds ε from below at this δ)", err)
				}
				if err != nil {
					return fmt.Errorf("dp-epsilon: %w", err)
				}
				out.Noise = &sigma
			} else {
				sigma := c.Float64("noise")
				if !(sigma > 0) || math.IsInf(sigma, 0) {
					return usageError("dp-epsilon: --noise %v: must be > 0 and finite (0 is no privacy: ε = ∞)", sigma)
				}
				out.Noise = &sigma
			}
			eps, order, err := dpaccount.Epsilon([]dpaccount.Phase{{SampleRate: q, Noise: *out.Noise, Steps: steps}}, delta, nil)
			if err == nil && math.IsInf(eps, 1) {
				// σ > 0 so small that α/(2σ²) overflows at every order
				// (q = 1, σ = 1e-300) printed "ε = +Inf (order α = NaN)".
				err = errors.New("ε overflows at every order")
			}
			if err != nil && !c.IsSet("target-epsilon") {
				// Only a noise far below any in use (1e-160) takes the
				// accountant's series past its bound.
				return usageError("dp-epsilon: --noise %v: the RDP accountant cannot bound ε at so little noise (%v); noise multipliers in use are around 0.5 to 10", *out.Noise, err)
			}
			if err != nil {
				return fmt.Errorf("dp-epsilon: %w", err)
			}
			out.Epsilon, out.Order = eps, order
			if !c.IsSet("target-epsilon") {
				out.Noise = nil
			}
			if c.Bool("json") {
				return json.NewEncoder(stdout).Encode(out)
			}
			if c.IsSet("target-epsilon") {
				fmt.Fprintf(stdout, "noise multiplier %.6g: ε = %.6g at δ = %g (order α = %g), sample rate %g, %d steps\n", *out.Noise, eps, delta, order, q, steps)
				return nil
			}
			fmt.Fprintf(stdout, "ε = %.6g at δ = %g (order α = %g)\n", eps, delta, order)
			return nil
		},
	}
}

// dpEpsilonOutput is what `memo dp-epsilon --json` prints.
type dpEpsilonOutput struct {
	// Epsilon is the ε spent at the given δ.
	Epsilon float64 `json:"epsilon"`
	// Order is the Rényi order α at which the conversion is tightest.
	Order float64 `json:"order"`
	// Noise is the noise multiplier found, with --target-epsilon only.
	Noise *float64 `json:"noise_multiplier,omitempty"`
}

// checkDPArgs refuses what the accountant cannot account, with the flag's
// name.
func checkDPArgs(q float64, steps int64, delta float64) error {
	switch {
	case !(q > 0 && q <= 1):
		return fmt.Errorf("--sample-rate %v: must be in (0, 1]", q)
	case steps < 1:
		return fmt.Errorf("--steps %d: must be >= 1", steps)
	case !(delta > 0 && delta < 1):
		return fmt.Errorf("--delta %v: must be in (0, 1)", delta)
	}
	return nil
}
