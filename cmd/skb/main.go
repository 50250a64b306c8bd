// Command skb moves packets through skb's datapath and measures it: pktgen, sink,
// pingpong, bench and lab. Run `skb help` for the commands and their flags.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skbdev/skb/internal/rseq"
)

// rootCmd is the top of the command tree; each subcommand adds itself to it from
// an init function in its own file.
var rootCmd = &cobra.Command{
	Use:           "skb",
	Short:         "Socket buffers and batched packet I/O: generate, sink, ping-pong, benchmark",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// exitError is an error that ends the command with an exit status other
// than 1: 127 or 126 for a program `lab exec` cannot run, 128+N for a run
// ended by signal N, as a shell reports them.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode returns the exit status for err: exitError's code, or 1.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func init() {
	rootCmd.Version = version()
	rootCmd.SetVersionTemplate("skb {{.Version}}\n")
	rootCmd.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := rootCmd.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return fmt.Errorf("help: no command %q: `skb help` lists them", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	})
	// A bad flag names its command, as the commands' own errors do
	// ("skb: pktgen: unknown flag: --bogus").
	rootCmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		err = flagValueError(err)
		if c == rootCmd {
			return err
		}
		return fmt.Errorf("%s: %w", strings.TrimPrefix(c.CommandPath(), rootCmd.Name()+" "), err)
	})
}

// flagValueError rewrites a flag value that did not parse, which the flag
// library reports as `invalid argument "-1" for "-n, --count" flag:
// strconv.ParseUint: parsing "-1": invalid syntax`, as `--count "-1": want a
// whole number, 0 or more`: a number or boolean by what its type wants, any
// other value (a duration) by its parser's own words. Other errors are
// returned as they are.
func flagValueError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	name, value, cause := iv.GetFlag().Name, iv.GetValue(), iv.Unwrap()
	var ne *strconv.NumError
	if !errors.As(cause, &ne) {
		return fmt.Errorf("--%s %q: %w", name, value, cause)
	}
	var want string
	switch ne.Func {
	case "ParseInt":
		want = "a whole number"
	case "ParseUint":
		want = "a whole number, 0 or more"
	case "ParseFloat":
		want = "a number"
	case "ParseBool":
		want = "true or false"
	default:
		return err
	}
	if errors.Is(ne.Err, strconv.ErrRange) {
		return fmt.Errorf("--%s %q: out of range for %s", name, value, want)
	}
	return fmt.Errorf("--%s %q: want %s", name, value, want)
}

// version returns what `skb --version` prints after the name: the module's
// version (or "(devel)" when built from a checkout), the VCS revision and
// whether the tree was modified, when the build recorded them (go build in
// a git checkout does; go run does not), and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown build)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if modified == "true" {
			v += "+modified"
		}
	}
	return v + " " + bi.GoVersion
}

func main() {
	// Linked against glibc (built with cgo), start again without its rseq
	// registration, which costs every wake-up of a receiver that sleeps
	// (see internal/rseq). Should the exec fail, run on with it.
	_ = rseq.Reexec()
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "skb:", err)
		os.Exit(exitCode(err))
	}
}
