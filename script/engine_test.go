package script

import (
	"sync"

	"github.com/fenced/fenced/reply"
)

// engines holds one verifying Engine per Limits, shared by the tests so
// that they reuse pooled sandboxes as the server does; every run checks,
// when its runner goes back to the pool, that the script could not change
// the sandbox.
var engines sync.Map

func engine(lim Limits) *Engine {
	lim = lim.normalized()
	if e, ok := engines.Load(lim); ok {
		return e.(*Engine)
	}
	e := NewEngine(lim)
	e.verify = true
	got, _ := engines.LoadOrStore(lim, e)
	return got.(*Engine)
}

func runLim(src string, keys, argv []string, env Env, seed int64, lim Limits) reply.Value {
	return engine(lim).Run(src, keys, argv, env, seed)
}

func stepsLim(src string, keys, argv []string, env Env, seed int64, lim Limits) (reply.Value, int64) {
	return engine(lim).runSteps(src, keys, argv, env, seed, 1)
}

// runV3 runs src with default limits at cluster version 3 (Redis 7's
// libraries on) on env (a fresh fake if nil).
func runV3(src string, keys, argv []string, env Env) reply.Value {
	if env == nil {
		env = newFakeEnv()
	}
	return engine(DefaultLimits()).RunAt(src, keys, argv, env, 0, LibsVersion)
}

func compileSrc(src string) error { return engine(DefaultLimits()).Compile(src) }
