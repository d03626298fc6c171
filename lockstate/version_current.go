//go:build !fencednext

package lockstate

// MaxVersion is the highest cluster version this binary knows.
//
//	1  every release before the version gate
//	2  Redis 7.0's simple string commands: SETNX, SETEX, PSETEX, GETSET,
//	   GETEX, APPEND, SETRANGE, INCRBY, INCRBYFLOAT, DECR, DECRBY, and
//	   EXPIRETIME and PEXPIRETIME inside scripts (commands.Spec.Version);
//	   LPOP key count extra answers the arity error (a syntax error at 1)
//	3  Redis 7.0's commands beyond strings (commands.Spec.Version lists
//	   them):
//	   - Lua: scripts see cjson, cmsgpack, bit and struct; the shebang is
//	     parsed as Redis 7 does and its flags act (no-writes, allow-oom);
//	     EVAL_RO and EVALSHA_RO (script.LibsVersion)
//	   - RENAME, RENAMENX, COPY, FLUSHALL, FLUSHDB, MOVE, SWAPDB, and
//	     TOUCH, RANDOMKEY and OBJECT inside scripts (wholekeys.go)
//	   - transactions: OpMulti (entry version 6), keys' and locks' mod
//	     indexes and tombstones for WATCH (mods.go)
//	   - PSUBSCRIBE, PUNSUBSCRIBE and PUBSUB; notify-keyspace-events as
//	     replicated state (an OpExec of CONFIG SET, notify.go) and the
//	     keyspace notifications of every write; KEYS and SCAN in scripts
//	     match an empty name as Redis does
//	   - Functions: FUNCTION, FCALL, FCALL_RO and the f/<library> records
//	     (functions.go)
//	   - SORT and SORT_RO, BY/GET patterns only for a user with every key
//	     (sort.go)
//	   - sets: SADD, SREM, SPOP, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD,
//	     SRANDMEMBER and the set record, key type 4 (sets.go)
//	   - allow-oom scripts and functions write, and EVAL caches its script,
//	     up to AllowOOMHeadroom past MaxMemory (memory.go); inside scripts
//	     PING runs, redis.acl_check_cmd exists, Redis's blocking commands
//	     fenced lacks are not allowed (not unknown), getmetatable(_G) is a
//	     read-only table
//	   - SETBIT, RPOP and HMSET, and GETBIT, BITCOUNT, BITPOS and LCS
//	     inside scripts (bits.go, lcs.go, listpops.go)
//	   - LMOVE, RPOPLPUSH, BLMOVE and BRPOPLPUSH (listmove.go; the
//	     blocking two never wait in the log, and are noscript)
const MaxVersion = 3

// incrStep is what INCR adds: 1 at every version this binary knows.
func (s *State) incrStep() int64 { return 1 }
