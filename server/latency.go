package server

import (
	"fmt"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// latencyCmd is LATENCY as Redis answers it with its latency monitor off
// (latency-monitor-threshold 0, which fenced keeps): no events are
// sampled, so LATEST and HISTORY are empty and RESET resets none. Tools
// that poll it (redis_exporter sends LATENCY LATEST) get a true, empty
// answer instead of an error. Per-command latency is in INFO
// commandstats, SLOWLOG and /metrics.
func (s *Server) latencyCmd(_ *resp.Conn, args [][]byte) resp.Value {
	sub := strings.ToUpper(string(args[1]))
	switch {
	case sub == "LATEST" && len(args) == 2:
		return resp.Array()
	case sub == "HISTORY" && len(args) == 3:
		return resp.Array()
	case sub == "RESET":
		return resp.Int(0)
	case sub == "DOCTOR" && len(args) == 2:
		return resp.BulkString("Latency monitoring is disabled in this fenced node (latency-monitor-threshold is 0 and cannot be set). " +
			"Per-command latency is in INFO commandstats, SLOWLOG and the Prometheus metrics.")
	case sub == "HELP" && len(args) == 2:
		return helpReply(
			"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR", "    Return a human readable latency analysis report.",
			"HISTORY <event>", "    Return time-latency samples for the <event> class.",
			"LATEST", "    Return the latest latency samples for all events.",
			"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HELP", "    Prints this help.",
		)
	case sub == "LATEST" || sub == "HISTORY" || sub == "DOCTOR" || sub == "HELP":
		return resp.Error(fmt.Sprintf("ERR wrong number of arguments for 'latency|%s' command", strings.ToLower(sub)))
	}
	return syntaxError("unknown subcommand '%s'. Try LATENCY HELP.", commands.Clip(args[1]))
}
