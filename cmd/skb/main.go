// Command skb moves packets through skb's datapath and measures it: pktgen, sink,
// pingpong, bench and lab. Run `skb help` for the commands and their flags.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// rootCmd is the top of the command tree; each subcommand adds itself to it from
// an init function in its own file.
var rootCmd = &cobra.Command{
	Use:           "skb",
	Short:         "Socket buffers and batched packet I/O: generate, sink, ping-pong, benchmark",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "skb:", err)
		os.Exit(1)
	}
}
