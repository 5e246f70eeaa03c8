// Command memo trains language models with the standard or the goldfish loss,
// attacks them with prefix-completion extraction and scores what comes back.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/dist"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/malloctune"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/runlock"
	"github.com/memo-research/memo/train"
)

// commands are memo's commands, listed here; `memo --help` shows them by
// name. Each is built in the file of its name (score, generate and export
// in models.go).
func commands() []*cli.Command {
	cmds := []*cli.Command{auditCommand(), benchCommand(), configCommand(), devicesCommand(), dataCommand(), dpEpsilonCommand(), evalCommand(), extractCommand(), helpCommand(), maskCommand()}
	cmds = append(cmds, scoreGenerateExportCommands()...)
	cmds = append(cmds, referencesCommand(), reportCommand(), runSpecCommand(), sweepCommand(), tokenizeCommand())
	cmds = append(cmds, indexCommand())
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}

// modelCommands are the commands that train or run models in this process.
var modelCommands = map[string]bool{"run": true, "bench": true, "extract": true, "eval": true, "score": true, "generate": true, "references": true, "audit": true}

// gracefulCommands stop on SIGINT and SIGTERM by themselves: they save
// what they have (training's checkpoint) or remove what they half wrote
// (export's and audit's temporary directories) and exit 130 with the
// contract's line.
var gracefulCommands = map[string]bool{"run": true, "extract": true, "sweep": true, "export": true, "references": true, "audit": true}

// errInterruptedAtOnce is what a command without a save of its own says
// when interrupted: what it was writing is gone, nothing resumes. extract
// and export, which stop by themselves, say it too (startsOver).
var errInterruptedAtOnce = errors.New("interrupted; what it was writing was removed; the same command starts over")

// startsOver is how a command that keeps nothing when interrupted reports
// err: errInterruptedAtOnce when ctx was cancelled under it, whatever the
// cancellation made fail, and err unchanged otherwise.
func startsOver(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return errInterruptedAtOnce
	}
	return err
}

// exitOnInterrupt makes SIGINT, SIGTERM and SIGHUP end every other command alike:
// one line and exit code 130, rather than SIGTERM's silent 143, so that a
// script sees one interruption whichever signal stopped them. Those
// commands write their files under temporary names, so stopping them at
// once loses only the work in flight.
func exitOnInterrupt(args []string) {
	if gracefulCommands[commandName(args)] {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, interruptSignals()...)
	go func() {
		<-ch
		// The process ends here, where no deferred clean-up runs: remove
		// the half-written files, which would otherwise stay as
		// .NAME.tmp-* beside their final names.
		atomicfile.RemoveTemps()
		// A --cpu-profile keeps what it measured up to the signal.
		if err := stopCPUProfile(); err != nil {
			slog.Warn("--cpu-profile", "err", err)
		}
		fmt.Fprintln(os.Stderr, "memo: "+errInterruptedAtOnce.Error())
		os.Exit(exitInterrupted)
	}()
}

// commandName is the command a command line names ("" for none), skipping
// the app's flags.
func commandName(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--log-level" || a == "-log-level" || a == "--cpu-profile" || a == "-cpu-profile":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// runsModels reports whether the command line names a model command and does
// not ask for help.
func runsModels(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "help" {
			return false
		}
	}
	return modelCommands[commandName(args)]
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
	app := newApp()
	// libtorch's errors reach gotch's log.Fatal with a C++ backtrace and a
	// Go stack in the message: print the one line that says what failed.
	log.SetFlags(0)
	log.SetOutput(oneLineLog{os.Stderr})
	defer crashReport()
	exitOnInterrupt(os.Args[1:])
	app.Writer = stdout
	// urfave/cli exits on a usage error inside Run, where the After hook
	// that ends a --cpu-profile does not run.
	cli.OsExiter = func(code int) {
		abandonCPUProfile()
		os.Exit(code)
	}
	err := app.Run(commandLine(app, os.Args))
	if err == nil && stdout.err != nil {
		// A command's output that did not arrive (a full disk, a closed
		// pipe) is a failure, not a success with nothing printed.
		err = fmt.Errorf("write standard output: %w", stdout.err)
	}
	if err != nil {
		if exit, ok := cliExit(err); ok {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, exitLine(msg))
			}
			os.Exit(exit.ExitCode())
		}
		msg, code := lastLine(err)
		fmt.Fprintln(os.Stderr, "memo: "+msg)
		os.Exit(code)
	}
}

// exitOnCLIExit is urfave/cli's HandleExitCoder printing exitLine: a
// command's cli.Exit prints its message and exits with its code, inside
// Run (so that the After hook does not write a refused command's
// --cpu-profile).
func exitOnCLIExit(_ *cli.Context, err error) {
	exit, ok := err.(cli.ExitCoder)
	if !ok {
		return
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(os.Stderr, exitLine(msg))
	}
	cli.OsExiter(exit.ExitCode())
}

// exitLine is a cli.Exit message as printed: memo's own messages are one
// line, so a newline in one came from an argument (a path with one) and
// is shown as \n rather than split the line.
func exitLine(msg string) string { return strings.ReplaceAll(msg, "\n", `\n`) }

// cliExit is the exit a command asked for (cli.Exit), where err holds
// one. A child's *exec.ExitError is a cli.ExitCoder too, but its code is
// the child's: npm or sbatch exiting 130 made memo exit 130,
// "interrupted", with no memo: line.
func cliExit(err error) (cli.ExitCoder, bool) {
	var exit cli.ExitCoder
	var child *exec.ExitError
	if errors.As(err, &exit) && !errors.As(err, &child) {
		return exit, true
	}
	return nil, false
}

// lastLine is the line memo's failure prints and its exit code: failure's,
// naming this process's rank when it is one of several and the line does
// not (an error a rank raised names it itself; an interruption is reported
// in words of its own, without the error's text).
func lastLine(err error) (string, int) {
	msg, code := failure(err)
	if !rankenv.Tagged(err) || code == exitInterrupted {
		msg = rankPrefix() + msg
	}
	return msg, code
}

// rankPrefix names this process's rank on its last line when it is one
// rank of several other than rank 0 ("rank 1 of 2: "): a launcher (srun
// -n 2, torchrun) shows every rank's line, and they were otherwise the
// same line twice. memo run --nproc labels its ranks' lines itself.
func rankPrefix() string {
	if dist.Launched() {
		return ""
	}
	c, err := rankenv.Discover(rankenv.Unset())
	if err != nil || c.Size <= 1 || c.Rank <= 0 {
		return ""
	}
	return fmt.Sprintf("rank %d of %d: ", c.Rank, c.Size)
}

// newApp is memo's command-line application.
func newApp() *cli.App {
	app := &cli.App{
		Name:  "memo",
		Usage: "train language models with the standard or goldfish loss and measure how much they memorize",
		Description: "memo trains GPT-style models on libtorch, attacks them with prefix-completion\n" +
			"extraction and scores exact match, RougeL and membership inference.\n" +
			"Start with: memo run exp/goldfish-vs-standard.toml",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a Go CPU profile of the command to `FILE` (go tool pprof reads it): where the host's time goes, e.g. in a GPU training step; for bench train, over the measured steps alone"},
		},
		Before: func(c *cli.Context) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
				return usageError("--log-level %q: want debug, info, warn or error", c.String("log-level"))
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
			// SetDefault points the log package at the handler: gotch's
			// log.Fatal of a libtorch error printed a 9 KB INFO line with
			// both backtraces. Its one line again, the rest at debug.
			log.SetFlags(0)
			log.SetOutput(oneLineLog{os.Stderr})
			if f := c.String("cpu-profile"); f != "" {
				if err := startCPUProfile(f); err != nil {
					return err
				}
			}
			return nil
		},
		After:           func(c *cli.Context) error { return stopCPUProfile() },
		ExitErrHandler:  exitOnCLIExit,
		Commands:        commands(),
		HideHelpCommand: true,
		// The revision alone: memoVersion prints --version's full line,
		// whose libtorch version costs a moment to read.
		Version: shortRevision(experiments.BuiltRevision()),
		// --set values are TOML and may hold commas ([0, 4]): one flag, one value.
		DisableSliceFlagSeparator: true,
		OnUsageError: func(c *cli.Context, err error, isSubcommand bool) error {
			return usageError("%s", flagMessage("", c.App.Flags, err))
		},
	}
	usageErrors(app.Commands, "")
	cli.VersionPrinter = memoVersion
	app.Action = func(c *cli.Context) error {
		if c.Args().Present() {
			c.App.CommandNotFound(c, c.Args().First())
		}
		return usageError("want a command (%s): memo [--log-level L] [--cpu-profile FILE] COMMAND ...; see `memo --help`", commandNames(c.App.Commands))
	}
	app.CommandNotFound = func(c *cli.Context, name string) {
		fmt.Fprintf(os.Stderr, "memo: unknown command %q: see `memo --help` for the commands\n", name)
		os.Exit(exitBadInput)
	}
	return app
}

// commandLine is the argument list app.Run gets: a request for help
// anywhere on the line becomes `memo help COMMAND...` (help, exit 0), else
// the flags move in front of the positional arguments.
func commandLine(app *cli.App, args []string) []string {
	if path, ok := helpRequest(app, args); ok {
		return append([]string{args[0], "help"}, path...)
	}
	return modelPrefix(hoistFlags(app, args))
}

// modelPrefix takes --model hf:DIR as --model DIR: a spec names a Hugging
// Face directory hf:DIR (train.init_from, extract.reference), and the
// same words carried over to a --model flag, which takes the directory
// itself, read "--model hf:DIR does not exist".
func modelPrefix(args []string) []string {
	for i, a := range args {
		switch {
		case a == "--":
			return args
		case (a == "--model" || a == "-model") && i+1 < len(args) && strings.HasPrefix(args[i+1], "hf:"):
			args[i+1] = strings.TrimPrefix(args[i+1], "hf:")
		case strings.HasPrefix(a, "--model=hf:") || strings.HasPrefix(a, "-model=hf:"):
			name, dir, _ := strings.Cut(a, "=")
			args[i] = name + "=" + strings.TrimPrefix(dir, "hf:")
		}
	}
	return args
}

// stdout is what every command prints to: standard output, checked.
var stdout = &checkedWriter{w: os.Stdout}

// checkedWriter is standard output remembering its first write error:
// commands print through it and need not each check every Fprintf.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Exit codes of the contract docs/COMMANDS.md documents.
const (
	exitFailure     = 1   // the machine or a library failed
	exitBadInput    = 2   // a spec, flag, data file, run directory or checkpoint the user gave
	exitInterrupted = 130 // SIGINT or SIGTERM; the same command resumes (audit: starts over)
)

// interruptedLine says where an interrupted training stopped and what the
// same command resumes from: a sharded run, saving only its periodic
// checkpoints, said "interrupted at step 0 of 200 (saved)" at step 34.
func interruptedLine(e *train.InterruptedError) string {
	switch {
	case e.At <= e.Step:
		return fmt.Sprintf("interrupted at step %d of %d (saved); the same command resumes", e.Step, e.Total)
	case e.Step == 0:
		return fmt.Sprintf("interrupted at step %d of %d, before the first periodic checkpoint (a sharded run saves no other); the same command starts training again", e.At, e.Total)
	default:
		return fmt.Sprintf("interrupted at step %d of %d; a sharded run saves only its periodic checkpoints: the same command resumes after step %d", e.At, e.Total, e.Step)
	}
}

// failure is the one line (without "memo: ") and the exit code for an
// error that is not a cli.ExitCoder.
func failure(err error) (string, int) {
	var intr *train.InterruptedError
	var held *runlock.HeldError
	var ce *experiments.ConfigError
	switch {
	case errors.As(err, &intr):
		return interruptedLine(intr), exitInterrupted
	case errors.Is(err, errAuditInterrupted):
		return errAuditInterrupted.Error(), exitInterrupted
	case errors.Is(err, errInterruptedAtOnce):
		return errInterruptedAtOnce.Error(), exitInterrupted
	case errors.Is(err, context.Canceled):
		return "interrupted; the same command resumes", exitInterrupted
	case badinput.Is(err), errors.As(err, &held), errors.As(err, &ce),
		errors.Is(err, experiments.ErrSpecChanged), errors.Is(err, arrowsafe.ErrCorrupt):
		// Bad input is one line, however many lines the error has.
		return oneLine(err.Error()), exitBadInput
	}
	return oneLine(err.Error()), exitFailure
}

// libtorchError marks the message gotch builds from a libtorch exception.
const libtorchError = "Libtorch API Error:"

// oneLine is the line of a failure message a user reads: for a libtorch
// exception, what libtorch said without its C++ backtrace and the Go stack
// gotch appends; otherwise the message with its lines joined.
func oneLine(msg string) string {
	if before, torch, ok := strings.Cut(msg, libtorchError); ok {
		first, _, _ := strings.Cut(strings.TrimSpace(torch), "\n")
		return strings.TrimSpace(before) + " libtorch: " + strings.TrimSpace(first)
	}
	// A c10 exception that reached us as a plain error (a c10d
	// rendezvous that timed out) carries its C++ backtrace after this.
	if before, _, ok := strings.Cut(msg, "Exception raised from"); ok {
		msg = before
	}
	return strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ")
}

// oneLineLog is the standard logger's output: gotch reports libtorch
// failures with log.Fatal, which exits right after writing.
type oneLineLog struct{ w io.Writer }

func (l oneLineLog) Write(p []byte) (int, error) {
	slog.Debug("libtorch failure in full", "message", string(p))
	_, err := fmt.Fprintln(l.w, "memo: "+strings.TrimSpace(oneLine(string(p))))
	return len(p), err
}

// crashReport turns a panic of the main goroutine (a bug in memo or a
// library) into one line and exit code 1, with the stack trace kept in a
// file for the bug report rather than on the terminal.
func crashReport() {
	r := recover()
	if r == nil {
		return
	}
	where := "(no stack trace: could not write a file)"
	if f, err := os.CreateTemp("", "memo-crash-*.txt"); err == nil {
		fmt.Fprintf(f, "panic: %v\n\n%s", r, debug.Stack())
		f.Close()
		where = "stack trace in " + f.Name()
	}
	fmt.Fprintf(os.Stderr, "memo: internal error: %s (%s; please report it)\n", oneLine(fmt.Sprint(r)), where)
	os.Exit(exitFailure)
}

// usageErrors makes a bad flag of any command (an unknown one, a value
// that does not parse) the one-line, exit-2 error the app's own flags give;
// urfave/cli applies the app's OnUsageError to the app's flags only. It
// also bounds every command's --threads, as train.threads is bounded.
func usageErrors(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		name := strings.TrimSpace(parent + " " + c.Name)
		if c.OnUsageError == nil {
			flags := c.Flags
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return usageError("%s: %s", name, flagMessage(name, flags, err))
			}
		}
		if hasFlag(c.Flags, "threads") {
			before := c.Before
			c.Before = func(ctx *cli.Context) error {
				if t, most := ctx.Int("threads"), experiments.MaxThreads(); t < 0 || t > most {
					return usageError("%s: --threads %d: must be in [0, %d] (%d a core; 0: the default)", name, t, most, most/runtime.NumCPU())
				}
				if before != nil {
					return before(ctx)
				}
				return nil
			}
		}
		if len(c.Subcommands) > 0 && c.Action == nil {
			// Without an Action urfave/cli prints the help on stdout and
			// exits 0, as if nothing were missing.
			c.Action = func(ctx *cli.Context) error {
				if ctx.Args().Present() {
					return usageError("%s: unknown subcommand %q: want one of %s", name, ctx.Args().First(), commandNames(c.Subcommands))
				}
				return usageError("%s: want a subcommand (%s); see `memo help %s`", name, commandNames(c.Subcommands), name)
			}
		}
		usageErrors(c.Subcommands, name)
	}
}

// commandNames lists the names of the visible commands, comma-separated.
func commandNames(cmds []*cli.Command) string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

// memoVersion prints memo --version's line, asked only then: reading the
// libtorch version costs a moment, and the revision is the build's own,
// never that of a git checkout the command runs in.
func memoVersion(c *cli.Context) {
	fmt.Fprintf(c.App.Writer, "memo version %s\n", versionLine(experiments.BuiltVersions()))
}

// shortRevision names the build in --help: its module version, else the
// first 12 digits of its revision ("unknown" for a build with neither),
// "+modified" for one built from a changed tree.
func shortRevision(v experiments.Versions) string {
	rev := v.Memo
	if rev == "" {
		rev = "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if v.MemoDirty {
		rev += "+modified"
	}
	if v.MemoVersion != "" && v.MemoVersion != "(devel)" {
		rev = v.MemoVersion + " (" + rev + ")"
	}
	return rev
}

// versionLine is what memo --version prints after "memo version": the
// revision memo was built from (as manifest.json records it; "unknown"
// for a build without one), its Go and its libtorch.
func versionLine(v experiments.Versions) string {
	return fmt.Sprintf("%s, %s, libtorch %s", shortRevision(v), v.Go, v.Libtorch)
}
