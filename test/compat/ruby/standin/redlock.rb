# frozen_string_literal: true

# A STAND-IN for redlock-rb's Redlock::Client, NOT the library.
#
# redlock-rb is a gem (no Debian package), which the test machines cannot
# fetch. test/compat/ruby/docs_page.rb puts this directory on $LOAD_PATH only
# when `require "redlock"` fails, so that docs/redlock-rb.md can run; with the
# real gem installed, the page runs on it instead.
#
# What it reproduces, written from the library's documented behaviour (no
# code of the library is copied): Client.new(servers, options), and
# lock(resource, ttl) with and without a block — the key is the resource name
# itself, holding a random UUID, with a TTL of ttl ms; the block gets false or
# { validity:, resource:, value: } and the lock is released after it. Locking
# and unlocking send the library's own LOCK_SCRIPT and UNLOCK_SCRIPT as
# recorded in test/testdata/scripts.json. What it does not: more than one
# server (fenced is given one), extend, lock? / locked?, redis-client's
# connection handling (this uses ruby-redis).

require "json"
require "redis"
require "securerandom"

module Redlock
  VERSION = "stand-in"

  class Client
    SCRIPTS = JSON.parse(File.read(File.join(__dir__, "..", "..", "..", "testdata", "scripts.json")))
    LOCK_SCRIPT = SCRIPTS.fetch("redlock-rb/LOCK_SCRIPT").fetch("text")
    UNLOCK_SCRIPT = SCRIPTS.fetch("redlock-rb/UNLOCK_SCRIPT").fetch("text")

    def initialize(servers, options = {})
      raise ArgumentError, "the stand-in takes exactly one server" unless servers.size == 1

      @redis = Redis.new(url: servers.first)
      @retry_count = options.fetch(:retry_count, 3)
      @retry_delay = options.fetch(:retry_delay, 200)
    end

    def lock(resource, ttl, _options = {})
      info = try_lock(resource, ttl)
      return info unless block_given?

      begin
        yield info
        !!info
      ensure
        unlock(info) if info
      end
    end

    def unlock(info)
      @redis.eval(UNLOCK_SCRIPT, keys: [info[:resource]], argv: [info[:value]])
    end

    private

    def try_lock(resource, ttl)
      value = SecureRandom.uuid
      (@retry_count + 1).times do |attempt|
        sleep(@retry_delay / 1000.0) if attempt.positive?
        start = Process.clock_gettime(Process::CLOCK_MONOTONIC, :millisecond)
        next unless @redis.eval(LOCK_SCRIPT, keys: [resource], argv: [value, ttl, "yes"])

        elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC, :millisecond) - start
        return { validity: ttl - elapsed - (ttl * 0.01).to_i - 2, resource: resource, value: value }
      end
      false
    end
  end
end
