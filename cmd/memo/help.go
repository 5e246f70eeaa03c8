package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the commands, or one command's flags and description",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			// Walk the command path so that an unknown name is refused
			// (exit 2) rather than urfave/cli's "No help topic" (exit 3).
			cmds := c.App.Commands
			for i, name := range c.Args().Slice() {
				cmd := findCommand(cmds, name)
				if cmd == nil {
					return usageError("help: unknown command %q: see `memo --help` for the commands", strings.Join(c.Args().Slice()[:i+1], " "))
				}
				cmds = cmd.Subcommands
			}
			args := append([]string{c.App.Name}, c.Args().Slice()...)
			return c.App.Run(append(args, "--help"))
		},
	}
}
