package main

import (
	"encoding/json"

	"github.com/memo-research/memo/experiments"
	"github.com/urfave/cli/v2"
)

func devicesCommand() *cli.Command {
	return &cli.Command{
		Name:  "devices",
		Usage: "print, as JSON, the devices and CPU kernels this memo sees (what manifest.json records)",
		Description: "Prints the machine record a run's manifest.json gets: the CUDA GPUs libtorch\n" +
			"sees (gpus; 0 on a CPU-only build), the CPU model and features that decide\n" +
			"which kernels run, libtorch's CPU dispatch level, its BLAS and OpenBLAS's kernel.",
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("devices: takes no arguments (got %q)", c.Args().Slice())
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(experiments.CurrentMachine())
		},
	}
}
