package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Command is one subcommand of a binary.
type Command struct {
	// Name is what the user types; Usage the rest of its usage line ("--sub USER ...").
	Name, Usage string
	// Summary is its line in the command list; Doc (optional) a paragraph its -h adds.
	Summary, Doc string
	// Run runs the command with the arguments after its name. Output goes to out,
	// messages for the user that are not the output to errOut.
	Run func(ctx context.Context, args []string, out, errOut io.Writer) error
}

// Program is a binary made of commands.
type Program struct {
	// Name is the binary's name, About one line on what it is.
	Name, About string
	Commands    []Command
	// Default runs when the first argument is not a command (none, or a flag).
	Default string
	// Footer ends the command list (e.g. where settings come from).
	Footer string
}

// Run dispatches args: "-h", "--help" or "help" prints the command list; "help CMD" and
// "CMD -h" print that command's help; an unknown command is a UsageError. Help goes to
// out and is not an error.
func (p *Program) Run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) || len(args) > 0 && args[0] == "help" {
		if args[0] == "help" && len(args) > 1 {
			return p.Run(ctx, []string{args[1], "-h"}, out, errOut)
		}
		fmt.Fprint(out, p.Usage())
		return nil
	}
	name := p.Default
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	cmd := p.find(name)
	if cmd == nil {
		return Usagef("unknown command %q\n\n%s", name, p.Usage())
	}
	err := cmd.Run(ctx, args, out, errOut)
	var help Help
	if errors.As(err, &help) {
		fmt.Fprint(out, p.commandHelp(cmd, help.Flags))
		return nil
	}
	return err
}

func (p *Program) find(name string) *Command {
	for i := range p.Commands {
		if p.Commands[i].Name == name {
			return &p.Commands[i]
		}
	}
	return nil
}

// Usage is the command list: one line per command.
func (p *Program) Usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nusage: %s [command] [flags]\n\ncommands:\n", p.About, p.Name)
	for _, c := range p.Commands {
		summary := c.Summary
		if c.Name == p.Default {
			summary += " (the default)"
		}
		fmt.Fprintf(&b, "  %-11s %s\n", c.Name, summary)
	}
	fmt.Fprintf(&b, "\n'%s COMMAND -h' lists the flags of a command.\n", p.Name)
	if p.Footer != "" {
		b.WriteString(p.Footer + "\n")
	}
	return b.String()
}

func (p *Program) commandHelp(c *Command, flags string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s %s %s\n\n%s.\n", p.Name, c.Name, c.Usage, capitalize(c.Summary))
	if c.Doc != "" {
		b.WriteString("\n" + c.Doc + "\n")
	}
	if flags != "" {
		b.WriteString("\nflags (-name or --name):\n" + flags)
	}
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// Parse parses args with fs and turns the flag package's outcomes into this package's:
// -h is Help with fs's flags; a bad flag is a UsageError naming it and saying how a good
// value looks. Nothing is printed (fs's output is discarded).
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	// The values are wrapped only while parsing: the flag package finds a flag's type
	// and default for -h from the value's own type.
	plain := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) { plain[f], f.Value = f.Value, explained{f.Value} })
	err := fs.Parse(args)
	fs.VisitAll(func(f *flag.Flag) { f.Value = plain[f] })
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, Help{Flags: FlagList(fs)}
	case err != nil:
		return nil, Usagef("%v (run '%s -h' for the flags)", err, fs.Name())
	}
	return fs.Args(), nil
}

// FlagList is fs's flags as the flag package prints them.
func FlagList(fs *flag.FlagSet) string {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	return b.String()
}

// SetFromEnv sets f from the value of the environment variable name, failing as a bad
// flag would, with the variable's name.
func SetFromEnv(f *flag.Flag, name, value string) error {
	v := explained{f.Value}
	if err := v.Set(value); err != nil {
		if v.IsBoolFlag() { // the flag package's wording
			return Usagef("invalid boolean value %q for %s: %v", value, name, err)
		}
		return Usagef("invalid value %q for %s: %v", value, name, err)
	}
	return nil
}

// explained is a flag value whose parse errors say what a valid value looks like (the
// flag package's own say only "parse error").
type explained struct{ flag.Value }

func (e explained) Set(s string) error {
	if err := e.Value.Set(s); err != nil {
		return errors.New(expected(e.Value))
	}
	return nil
}

// IsBoolFlag keeps "-flag" without a value working for booleans.
func (e explained) IsBoolFlag() bool {
	b, ok := e.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func expected(v flag.Value) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return "not a valid value"
	}
	switch g.Get().(type) {
	case time.Duration:
		return "not a duration (examples: 90s, 15m, 1h30m)"
	case bool:
		return "not a boolean (true or false)"
	case int, int64, uint, uint64:
		return "not a whole number"
	case float64:
		return "not a number"
	}
	return "not a valid value"
}
