package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parleyhq/parley/policy"
)

// Exit codes.
const (
	exitOK     = 0 // clean: no errors (warnings allowed)
	exitErrors = 1 // a policy has errors
	exitUsage  = 2 // a usage or I/O problem
)

// command is a subcommand: its flags, its usage text and what it does.
type command struct {
	name string
	// usage is the text above the flag list; exitCodes and examples follow
	// it.
	usage     string
	exitCodes string
	examples  string
	// flags builds the command's flag set, registering its flags into
	// the options value run receives.
	flags func(fs *flag.FlagSet) any
	run   func(c *command, opts any, args []string, stdout, stderr io.Writer) int
}

// commands lists the commands; validateCommand, named "", is the default.
var commands = []*command{validateCommand, convertCommand, graphCommand, exploreCommand, traceCommand, replayCommand, lspCommand}

func commandNamed(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// subcommands are the names that select a command as the first argument;
// any other first argument is a path to validate.
func subcommands() []string {
	return []string{"convert", "graph", "explore", "trace", "replay", "lsp", "help"}
}

// run is the whole program: it parses args, runs the command they name
// and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "help":
			return runHelp(args[1:], stdout, stderr)
		case "convert", "graph", "explore", "trace", "replay", "lsp":
			return runCommand(commandNamed(args[0]), args[1:], stdout, stderr)
		}
		// A first argument that looks like a command but is no file is
		// most likely a mistyped command: say so before its flags, which
		// belong to that command, are misread as the validator's.
		if a := args[0]; !strings.HasPrefix(a, "-") && !strings.ContainsAny(a, `/\.`) {
			if _, err := os.Stat(a); err != nil {
				fmt.Fprintf(stderr, "cpvalidate: %v\n", pathError(a, err))
				return exitUsage
			}
		}
	}
	return runCommand(validateCommand, args, stdout, stderr)
}

// runHelp prints the usage of the program or of one command.
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		printUsage(validateCommand, stdout)
		return exitOK
	case 1:
		name := args[0]
		if name == "validate" || name == "help" {
			name = ""
		}
		if c := commandNamed(name); c != nil {
			printUsage(c, stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "cpvalidate help: unknown command %s (commands: %s)\n", policy.Quote(args[0]), strings.Join(subcommands(), ", "))
		return exitUsage
	}
	fmt.Fprintln(stderr, "cpvalidate help: too many arguments; usage: cpvalidate help [COMMAND]")
	return exitUsage
}

// runCommand parses the command's flags (which may come before, between
// or after its other arguments) and runs it.
func runCommand(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.fullName(), flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // usage is printed below, to the right stream
	opts := c.flags(fs)
	rest, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(c, stdout)
		return exitOK
	}
	if err != nil {
		// The flag package has already said what is wrong.
		fmt.Fprintf(stderr, "run '%s -h' for usage\n", c.fullName())
		return exitUsage
	}
	return c.run(c, opts, rest, stdout, stderr)
}

func (c *command) fullName() string {
	if c.name == "" {
		return "cpvalidate"
	}
	return "cpvalidate " + c.name
}

// usageError reports a usage problem and returns exitUsage.
func (c *command) usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", c.fullName(), fmt.Sprintf(format, args...))
	fmt.Fprintf(stderr, "run '%s -h' for usage\n", c.fullName())
	return exitUsage
}

// parseInterspersed parses flags that may appear anywhere among the
// positional arguments, as in "cpvalidate graph FILE -role R"; "--" ends
// the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// printUsage prints a command's complete usage: what it does, every flag,
// the exit codes and examples.
func printUsage(c *command, w io.Writer) {
	fmt.Fprint(w, c.usage)
	fs := flag.NewFlagSet(c.fullName(), flag.ContinueOnError)
	c.flags(fs)
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nExit status:\n"+c.exitCodes)
	fmt.Fprint(w, "\nExamples:\n"+c.examples)
}

// enumFlag is a string flag that accepts one of a fixed set of values.
type enumFlag struct {
	value   string
	allowed []string
}

func (e *enumFlag) String() string { return e.value }

func (e *enumFlag) Set(s string) error {
	for _, a := range e.allowed {
		if s == a {
			e.value = s
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(e.allowed, ", "))
}

func newEnum(def string, allowed ...string) *enumFlag {
	return &enumFlag{value: def, allowed: allowed}
}

// plural renders "1 error", "2 errors".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
