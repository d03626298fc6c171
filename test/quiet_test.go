package test

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// go-redis logs through a logger of its own package, to stderr, whatever
// the test: every failed dial of a pool whose node a test killed (hundreds
// of lines in make test), which buries what failed. The tests report the
// errors they care about themselves, so it is silenced for the whole test
// binary, as ctl silences it for its process. An init, so that TestMain
// (harness_test.go) need not know.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
