# frozen_string_literal: true

# Runs docs/redlock-rb.md's example against fenced. Run by test/docs_test.go.
#
#   ruby docs_page.rb --page FILE --addr HOST:PORT --other-addr HOST:PORT
#
# FILE is the page's ```ruby block, with its address replaced by --addr. It
# must define update_orders, which yields the fencing token of one
# acquisition of the lock "orders", and read that token through a
# ruby-redis client's call. redlock-rb itself is used if it loads, else the
# stand-in in standin/ (see its header for what that covers). Checks,
# through this program's own connections:
#
#   1. two calls: the page reads its token with the value the library stored,
#      the token is the current holder's, strictly larger on the second call,
#      and the lock is released afterwards;
#   2. a paused holder: between the page's acquisition and its token read,
#      the key expires (PEXPIRE 50 ms stands in for a pause of the lock's
#      10 s) and a successor takes it through the library on --other-addr.
#      The page's FENCE key IFEQ answers nil, update_orders raises without
#      yielding, and the successor's own read is above the paused holder's.
#
# Prints one JSON summary line and exits 0; a failed check prints
# "FAIL: ..." on stderr and exits 1.

require "json"
require "redis"

begin
  require "redlock"
rescue LoadError
  $LOAD_PATH.unshift(File.join(__dir__, "standin"))
  require "redlock"
end

class CheckFailed < StandardError; end

$checks = 0
def check(cond, what, *detail)
  $checks += 1
  raise CheckFailed, ([what] + detail.map(&:inspect)).join(" ") unless cond
end

opts = ARGV.each_slice(2).to_h { |k, v| [k.delete_prefix("--"), v] }
%w[page addr other-addr].each { |k| abort("usage error: --#{k} is required") unless opts[k] }
KEY = "orders"

# Every FENCE a Redis client sends outside this program's own checks (that
# is, the page's) goes through Spy: recorded, after the pause when one is set.
module Spy
  class << self
    attr_accessor :seen, :pause, :addr
  end
  self.seen = []

  def call(*cmd, &blk)
    return super if Thread.current[:driver] || cmd.first.to_s.upcase != "FENCE"

    Thread.current[:driver] = true
    begin
      check(cmd.size == 4 && cmd[2].to_s.upcase == "IFEQ",
            "the page reads its token with FENCE key IFEQ value", cmd)
      check(connection[:location] == Spy.addr, "the page's client is pointed at --addr", connection)
      pause = Spy.pause
      Spy.pause = nil
      pause&.call(cmd[3])
    ensure
      Thread.current[:driver] = nil
    end
    reply = super
    Spy.seen << [cmd, reply]
    reply
  end
end
Spy.addr = opts["addr"]
Redis.prepend(Spy)

# driver runs this program's own commands, which Spy lets through.
def driver
  Thread.current[:driver] = true
  yield
ensure
  Thread.current[:driver] = nil
end

begin
  load opts["page"]
  check(respond_to?(:update_orders, true), "the page defines update_orders")
  mon = Redis.new(url: "redis://#{opts['addr']}")
  other = Redis.new(url: "redis://#{opts['other-addr']}")

  # 1. two acquisitions
  tokens = []
  2.times do
    written = []
    update_orders do |token|
      driver do
        check(token.is_a?(Integer) && token.positive?, "the block gets an integer token", token)
        cmd, = Spy.seen.last
        check(cmd[1] == KEY, "the page fences the lock's key", cmd[1])
        check(mon.get(KEY) == cmd[3], "the value the page passes to IFEQ is the one the library stored", cmd[3])
        check(mon.call("FENCE", KEY) == token, "the token is the current holder's", token)
      end
      written << token
    end
    check(written.size == 1, "the block ran once", written)
    driver { check(mon.exists(KEY).zero?, "the page releases the lock") }
    tokens << written.first
  end
  check(tokens[1] > tokens[0], "a later acquisition has a larger token", tokens)

  # 2. a paused holder
  succ = {}
  Spy.pause = lambda do |value|
    succ[:a] = mon.call("FENCE", KEY, "IFEQ", value)
    check(succ[:a].is_a?(Integer) && succ[:a] > tokens[1], "the holder's token before its pause", succ[:a])
    mon.pexpire(KEY, 50)
    250.times { mon.exists(KEY).zero? ? break : sleep(0.02) }
    check(mon.exists(KEY).zero?, "the lock expired during the pause")
    succ[:manager] = Redlock::Client.new(["redis://#{opts['other-addr']}"])
    succ[:lock] = succ[:manager].lock(KEY, 10_000)
    check(succ[:lock], "the successor acquires")
    succ[:b] = other.call("FENCE", KEY, "IFEQ", succ[:lock][:value])
  end
  written = []
  raised = nil
  begin
    update_orders { |token| written << token }
  rescue StandardError => e
    raise if e.is_a?(CheckFailed)

    raised = e
  end
  driver do
    check(Spy.pause.nil? && succ.key?(:a), "the page read its token after the pause")
    check(Spy.seen.last[1].nil?, "the paused holder's FENCE key IFEQ answers nil", Spy.seen.last[1])
    check(!raised.nil?, "update_orders raises when the lock was lost")
    check(written.empty?, "the paused holder does not write", written)
    check(succ[:b].is_a?(Integer) && succ[:b] > succ[:a], "the successor's own token is above the paused holder's", succ)
    check(other.call("FENCE", KEY, "IFEQ", succ[:lock][:value]) == succ[:b],
          "the successor still holds the lock after the paused holder's run")
    succ[:manager].unlock(succ[:lock])
    check(mon.exists(KEY).zero?, "the successor releases")
  end
  warn "paused holder: #{raised.message}"
  puts JSON.generate(mode: "docs", checks: $checks, fence: tokens + [succ[:a], succ[:b]],
                     lib: "redlock-rb #{Redlock::VERSION} on ruby-redis #{Redis::VERSION}")
rescue CheckFailed => e
  warn "FAIL: #{e.message}"
  exit 1
end
