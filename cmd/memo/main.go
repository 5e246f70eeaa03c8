// Command memo trains language models with the standard or the goldfish loss,
// attacks them with prefix-completion extraction and scores what comes back.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/malloctune"
	"github.com/memo-research/memo/internal/runlock"
)

// commands is filled by the init functions of the files beside this one, one
// file per command, so that each command is owned by the file that builds it.
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

// modelCommands are the commands that train or run models in this process.
var modelCommands = map[string]bool{"run": true, "bench": true, "extract": true, "eval": true, "score": true, "generate": true}

// runsModels reports whether the command line names a model command and does
// not ask for help.
func runsModels(args []string) bool {
	command := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help" || a == "help":
			return false
		case a == "--log-level" || a == "-log-level":
			i++
		case strings.HasPrefix(a, "-"):
		case command == "":
			command = a
		}
	}
	return modelCommands[command]
}

// usageError is a bad-input error: it prints one line and exits with code 2.
func usageError(format string, args ...any) error {
	return cli.Exit("memo: "+fmt.Sprintf(format, args...), 2)
}

func main() {
	// Restart once with allocator settings that roughly double CPU training
	// throughput (see malloctune); on failure memo still works, only slower.
	// Commands that never run a model skip the restart: loading libtorch twice
	// costs about a second.
	if runsModels(os.Args[1:]) {
		if err := malloctune.Apply(); err != nil {
			fmt.Fprintln(os.Stderr, "memo: warning:", err)
		}
	}
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	app := &cli.App{
		Name:  "memo",
		Usage: "train language models with the standard or goldfish loss and measure how much they memorize",
		Description: "memo trains GPT-style models on libtorch, attacks them with prefix-completion\n" +
			"extraction and scores exact match, RougeL and membership inference.\n" +
			"Start with: memo run exp/goldfish-vs-standard.toml",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		},
		Before: func(c *cli.Context) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
				return usageError("--log-level %q: want debug, info, warn or error", c.String("log-level"))
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
			return nil
		},
		Commands:        commands,
		HideHelpCommand: true,
		// --set values are TOML and may hold commas ([0, 4]): one flag, one value.
		DisableSliceFlagSeparator: true,
		OnUsageError: func(c *cli.Context, err error, isSubcommand bool) error {
			return usageError("%v", err)
		},
	}
	if err := app.Run(os.Args); err != nil {
		var exit cli.ExitCoder
		if errors.As(err, &exit) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, msg)
			}
			os.Exit(exit.ExitCode())
		}
		code := exitCode(err)
		msg := err.Error()
		if code == 2 {
			// Bad input is one line, however many lines the error has.
			msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ")
		}
		fmt.Fprintln(os.Stderr, "memo:", msg)
		os.Exit(code)
	}
}

// exitCode is the exit status for an error that is not a cli.ExitCoder: 2
// for bad input (a spec, a data file, a run directory the user pointed at),
// 1 for a failure of the machine or a library.
func exitCode(err error) int {
	var held *runlock.HeldError
	var ce *experiments.ConfigError
	switch {
	case badinput.Is(err), errors.As(err, &held), errors.As(err, &ce),
		errors.Is(err, experiments.ErrSpecChanged), errors.Is(err, arrowsafe.ErrCorrupt):
		return 2
	}
	return 1
}
