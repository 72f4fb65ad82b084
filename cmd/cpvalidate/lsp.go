package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/parleyhq/parley/internal/lsp"
)

var lspCommand = &command{
	name: "lsp",
	usage: `cpvalidate lsp is a language server for policy files: it speaks the
Language Server Protocol over stdin and stdout, for an editor to start.

Usage:
  cpvalidate lsp [-log FILE]

For each open YAML or CP-XML policy it publishes, as you type, exactly
the diagnostics cpvalidate reports, with their codes and related
positions; child policies are found among the other open files, then
among the policies Parley ships. It offers hover (what a name declares,
what a key means), go to definition and find references for states,
message types, timers, roles, commitments and variables, completion of
names and keys, and rename throughout the file. See docs/editors.md for
VS Code, Neovim and Helix.

A message has at most 65 MiB (a larger one ends the session), and at
most 256 files are checked at once.
`,
	exitCodes: `  0  the editor sent shutdown and exit
  1  the session ended otherwise (the editor went away, or sent a message
     the server cannot read)
  2  usage error
`,
	examples: `  cpvalidate lsp
  cpvalidate lsp -log /tmp/cpvalidate-lsp.log
`,
	flags: lspFlags,
	run:   runLSP,
}

type lspOptions struct {
	log string
}

func lspFlags(fs *flag.FlagSet) any {
	o := &lspOptions{}
	fs.StringVar(&o.log, "log", "", "append the server's own log to `FILE` (default: stderr)")
	return o
}

func runLSP(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*lspOptions)
	if len(args) > 0 {
		return c.usageError(stderr, "takes no arguments; the editor sends the files")
	}
	logTo := stderr
	if o.log != "" {
		f, err := os.OpenFile(o.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
			return exitUsage
		}
		defer f.Close()
		logTo = f
	}
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if err := lsp.Serve(context.Background(), os.Stdin, stdout, lsp.WithVersion(version), lsp.WithLog(logTo)); err != nil {
		fmt.Fprintf(logTo, "%s: %v\n", c.fullName(), err)
		return exitErrors
	}
	return exitOK
}
