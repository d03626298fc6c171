package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fenced/fenced/commands"
)

// The name caps: a lock name, OWNER tag, REQ id
// or session label at its cap works, one byte more is refused with its
// error, and the refused request changes nothing.
func TestNameCaps(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := n.clientProto(t, proto)
			s := openSession(t, c, 60000, "caps")
			at := func(max int, c byte) string { return strings.Repeat(string(c), max) }
			past := func(max int, c byte) string { return strings.Repeat(string(c), max+1) }
			name := fmt.Sprintf("caps%d-", proto)
			refused := func(want string, args ...any) {
				t.Helper()
				_, err := do(tctx(t), c, args...)
				if err == nil || err.Error() != want {
					t.Fatalf("%.60v...: %v, want %q", args, err, want)
				}
			}
			free := func(lock string) {
				t.Helper()
				if h, _ := lockHolder(t, c, lock); h != "" {
					t.Fatalf("%.40s... is held by %s after a refused FLOCK", lock, h)
				}
			}

			// Lock names.
			long := name + at(commands.MaxLockName-len(name), 'l')
			mustInt(t, c, "FLOCK", long, s)
			mustInt(t, c, "FUNLOCK", long, s)
			tooLong := name + past(commands.MaxLockName-len(name), 'l')
			refused("ERR lock name longer than 4096 bytes", "FLOCK", tooLong, s)
			free(tooLong)

			// OWNER tags.
			mustInt(t, c, "FLOCK", name+"o", s, "OWNER", at(commands.MaxOwner, 'o'))
			mustInt(t, c, "FUNLOCK", name+"o", s, "OWNER", at(commands.MaxOwner, 'o'))
			refused("ERR OWNER tag longer than 256 bytes", "FLOCK", name+"o2", s, "OWNER", past(commands.MaxOwner, 'o'))
			free(name + "o2")

			// REQ ids: FLOCK's and FUNLOCK's.
			tok := mustInt(t, c, "FLOCK", name+"r", s, "REQ", at(commands.MaxReq, 'r'))
			if again := mustInt(t, c, "FLOCK", name+"r", s, "REQ", at(commands.MaxReq, 'r')); again != tok {
				t.Fatalf("a repeated REQ at the cap answered %d, want the first answer %d", again, tok)
			}
			refused("ERR REQ id longer than 128 bytes", "FUNLOCK", name+"r", s, "REQ", past(commands.MaxReq, 'r'))
			if h, _ := lockHolder(t, c, name+"r"); h != s {
				t.Fatalf("a refused FUNLOCK released the lock (holder %q)", h)
			}
			mustInt(t, c, "FUNLOCK", name+"r", s)
			refused("ERR REQ id longer than 128 bytes", "FLOCK", name+"r2", s, "REQ", past(commands.MaxReq, 'r'))
			free(name + "r2")

			// Session labels.
			before := sessionCount(t, n)
			at1024 := openSession(t, c, 60000, at(commands.MaxLabel, 'n'))
			refused("ERR session NAME longer than 1024 bytes", "SESSION.OPEN", "NAME", past(commands.MaxLabel, 'n'))
			if got := sessionCount(t, n); got != before+1 {
				t.Fatalf("%d sessions after one accepted and one refused SESSION.OPEN, want %d", got, before+1)
			}
			mustInt(t, c, "SESSION.KILL", at1024)
		})
	}
}

func sessionCount(t *testing.T, n *node) int {
	t.Helper()
	v, err := do(tctx(t), n.client(t), "SESSION.LIST")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := v.([]any)
	return len(l)
}

// The finding behind the label cap: 200 SESSION.OPEN NAME <400 KiB> took a
// node from 53 MB to 381 MB RSS and 113 MB of disk, on every replica. Now
// each is refused, no session is opened, and the RSS stays near where it
// was.
func TestLabelBombRefused(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	before := n.rssBytes(t) >> 10
	label := strings.Repeat("x", 400<<10)
	for i := range 200 {
		if _, err := do(tctx(t), c, "SESSION.OPEN", "NAME", label); err == nil || !strings.Contains(err.Error(), "NAME longer than") {
			t.Fatalf("SESSION.OPEN %d with a 400 KiB label: %v, want the cap's error", i, err)
		}
	}
	if got := sessionCount(t, n); got != 0 {
		t.Fatalf("%d sessions opened", got)
	}
	after := n.rssBytes(t) >> 10
	t.Logf("RSS %d KiB before, %d KiB after 200 refused 400 KiB labels", before, after)
	if after > before+64<<10 {
		t.Fatalf("RSS grew from %d to %d KiB", before, after)
	}
}
