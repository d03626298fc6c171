-- The scripts of TestLibsRedis: each case runs as EVAL <script> 0 on
-- redis-server 7.0 (recorded in libs.expected.json by TestRecordLibs) and
-- on fenced at cluster version 3, in RESP2 and RESP3. Cases named env_*
-- call commands: they run only in the differential test
-- (test/diff_lualibs_test.go), against a real state.
-- case: cjson_encode_array
return cjson.encode({1, 2, 3, "a", true, false})
-- case: cjson_encode_object_one
return cjson.encode({key = "value"})
-- case: cjson_encode_nested
return cjson.encode({a = {1, 2, {b = {}}}})
-- case: cjson_encode_numbers
return cjson.encode({0.1, 1/3, 1e20, 123456789012345, 1e14, -0.0, 2^53, 1e-7, 3.14159265358979})
-- case: cjson_encode_escapes
return cjson.encode("a/b\"c\\d\n\r\t\b\f\1\31\127\128\255é")
-- case: cjson_encode_sparse_ok
local t = {} t[1] = 1 t[3] = 3 return cjson.encode(t)
-- case: cjson_encode_sparse_err
local t = {} t[1] = 1 t[20] = 3 return cjson.encode(t)
-- case: cjson_encode_sparse_safe
local t = {} t[10] = 1 return cjson.encode(t)
-- case: cjson_encode_sparse_convert
cjson.encode_sparse_array(true) local t = {} t[20] = 1 return cjson.encode(t)
-- case: cjson_encode_sparse_ratio0
cjson.encode_sparse_array(false, 0) local t = {} t[30] = 1 return cjson.encode(t)
-- case: cjson_encode_sparse_returns
return {cjson.encode_sparse_array(true, 3, 5)}
-- case: cjson_encode_sparse_returns_default
local a, b, c = cjson.encode_sparse_array() return {tostring(a), b, c}
-- case: cjson_encode_empty
return cjson.encode({})
-- case: cjson_encode_nan
return cjson.encode(0/0)
-- case: cjson_encode_inf
return cjson.encode({1/0})
-- case: cjson_encode_invalid_on
cjson.encode_invalid_numbers(true) return cjson.encode({1/0, -1/0, 0/0})
-- case: cjson_encode_invalid_null
return {cjson.encode_invalid_numbers("null"), cjson.encode({1/0, 0/0})}
-- case: cjson_encode_invalid_bad
return cjson.encode_invalid_numbers("maybe")
-- case: cjson_encode_function
return cjson.encode({f = function() end})
-- case: cjson_encode_bad_key
return cjson.encode({[true] = 1})
-- case: cjson_encode_number_key
return cjson.encode({[1.5] = "x"})
-- case: cjson_encode_nil
return cjson.encode(nil)
-- case: cjson_encode_noargs
return cjson.encode()
-- case: cjson_encode_twoargs
return cjson.encode(1, 2)
-- case: cjson_encode_cycle
local t = {} t[1] = t return cjson.encode(t)
-- case: cjson_encode_cycle_obj
local t = {} t.x = t return cjson.encode(t)
-- case: cjson_encode_depth
cjson.encode_max_depth(2) return cjson.encode({{{1}}})
-- case: cjson_encode_depth_ok
return {cjson.encode_max_depth(3), cjson.encode({{{1}}})}
-- case: cjson_encode_depth_bad
return cjson.encode_max_depth(0)
-- case: cjson_encode_depth_str
return cjson.encode_max_depth("x")
-- case: cjson_encode_depth_many
return cjson.encode_max_depth(1, 2)
-- case: cjson_precision
cjson.encode_number_precision(3) return cjson.encode({1/3, 12345, 0.5})
-- case: cjson_precision_bad
return cjson.encode_number_precision(15)
-- case: cjson_precision_ret
return cjson.encode_number_precision()
-- case: cjson_keep_buffer
return {cjson.encode_keep_buffer(false), cjson.encode_keep_buffer("on"), cjson.encode_keep_buffer()}
-- case: cjson_null_encode
return cjson.encode({cjson.null, 1})
-- case: cjson_null_tostring
return {tostring(cjson.null), type(cjson.null)}
-- case: cjson_null_reply
return cjson.null
-- case: cjson_null_in_array_reply
return {1, cjson.null, 2}
-- case: cjson_decode_object
local t = cjson.decode('{"a": [1, 2.5, "x", true, false], "b": {"c": null}}') return {t.a[1], t.a[2], t.a[3], t.a[4], tostring(t.a[5]), t.b.c == cjson.null}
-- case: cjson_decode_roundtrip
return cjson.encode(cjson.decode('[1,"two",[3,{"four":4}],null,true]'))
-- case: cjson_decode_string_escapes
return cjson.decode('"a\\u00e9\\u20ac\\ud83d\\ude00\\n\\/\\"\\\\\\b\\f\\r\\t"')
-- case: cjson_decode_bad_surrogate
return cjson.decode('"\\udc00"')
-- case: cjson_decode_lone_high
return cjson.decode('"\\ud800x"')
-- case: cjson_decode_bad_escape
return cjson.decode('"\\q"')
-- case: cjson_decode_unterminated
return cjson.decode('"abc')
-- case: cjson_decode_trailing
return cjson.decode('[1] x')
-- case: cjson_decode_trailing_comma
return cjson.decode('[1,]')
-- case: cjson_decode_obj_missing_colon
return cjson.decode('{"a" 1}')
-- case: cjson_decode_obj_bad_key
return cjson.decode('{1: 2}')
-- case: cjson_decode_obj_end
return cjson.decode('{"a": 1 "b"}')
-- case: cjson_decode_empty
return cjson.decode('')
-- case: cjson_decode_ws
return cjson.decode('  \t\n 42 \r\n')
-- case: cjson_decode_invalid_token
return cjson.decode('[tru]')
-- case: cjson_decode_numbers
local t = cjson.decode('[0, -0, 1e3, 1E+2, -1.5e-3, 0.5, 123456789012345678901234567890]') local out = {} for i, v in ipairs(t) do out[i] = tostring(v) end return out
-- case: cjson_decode_hex
return tostring(cjson.decode('0x1F'))
-- case: cjson_decode_inf_nan
local t = cjson.decode('[inf, -Infinity, nan, +5, 007]') return {tostring(t[1]), tostring(t[2]), tostring(t[3] ~= t[3]), tostring(t[4]), tostring(t[5])}
-- case: cjson_decode_invalid_off
cjson.decode_invalid_numbers(false) return cjson.decode('[1, 0x10]')
-- case: cjson_decode_invalid_off_inf
cjson.decode_invalid_numbers(false) return cjson.decode('-inf')
-- case: cjson_decode_invalid_off_plus
cjson.decode_invalid_numbers(false) return cjson.decode('+1')
-- case: cjson_decode_minus
return cjson.decode('-')
-- case: cjson_decode_dot
return cjson.decode('-.5')
-- case: cjson_decode_exp_only
return cjson.decode('1e')
-- case: cjson_decode_huge
return tostring(cjson.decode('1e999'))
-- case: cjson_decode_depth
return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))
-- case: cjson_decode_depth_ok
return #cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))
-- case: cjson_decode_depth_obj
return cjson.decode(string.rep('{"a":', 1001) .. '1' .. string.rep('}', 1001))
-- case: cjson_decode_depth_set
cjson.decode_max_depth(2) return cjson.decode('[[[1]]]')
-- case: cjson_decode_depth_huge
cjson.decode_max_depth(100000) return cjson.decode(string.rep('[', 9000) .. string.rep(']', 9000))
-- case: cjson_decode_depth_huge_obj
cjson.decode_max_depth(100000) return cjson.decode(string.rep('{"a":', 5000) .. '1' .. string.rep('}', 5000))
-- case: cjson_decode_utf16
return cjson.decode('\0a')
-- case: cjson_decode_nul_inside
return cjson.decode('[1]\0garbage')
-- case: cjson_decode_noarg
return cjson.decode()
-- case: cjson_decode_table_arg
return cjson.decode({})
-- case: cjson_decode_number_arg
return cjson.decode(12)
-- case: cjson_decode_invalid_utf8
return cjson.encode(cjson.decode('"\255\254 ok"'))
-- case: cjson_decode_ctrl_raw
return cjson.decode('"a\1b"')
-- case: cjson_meta
return {cjson._NAME, cjson._VERSION, type(cjson.new)}
-- case: cjson_new_independent
local c = cjson.new() c.encode_max_depth(1) return {pcall(c.encode, {{1}}), cjson.encode({{1}})}
-- case: cjson_readonly
cjson.encode = nil return 1
-- case: cjson_pcall_error
return {pcall(cjson.decode, '{')}
-- case: cmsgpack_pack_basic
return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, -32, -33, -128, -129, -32768, -32769, 4294967295, 4294967296, -2147483648, -2147483649)
-- case: cmsgpack_pack_types
return cmsgpack.pack(true, false, nil, "x", 1.5, 0.1, 1/0, -1/0, 2^63, -2^63)
-- case: cmsgpack_pack_tables
return cmsgpack.pack({1, 2, 3}, {}, {a = 1}, {[1] = 1, [3] = 3}, {[2] = 2})
-- case: cmsgpack_pack_strings
return cmsgpack.pack(string.rep('a', 31), string.rep('b', 32), string.rep('c', 256), string.rep('d', 65536))
-- case: cmsgpack_pack_big_array
local t = {} for i = 1, 70000 do t[i] = i % 3 end return #cmsgpack.pack(t)
-- case: cmsgpack_pack_nesting
local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)
-- case: cmsgpack_pack_cycle
local t = {} t[1] = t return cmsgpack.pack(t)
-- case: cmsgpack_pack_noargs
return cmsgpack.pack()
-- case: cmsgpack_pack_function
return cmsgpack.pack(function() end, cjson.null)
-- case: cmsgpack_roundtrip
local a, b, c, d = cmsgpack.unpack(cmsgpack.pack({1, "x", {2}}, "y", 3.25, false)) return {a[1], a[2], a[3][1], b, tostring(c), tostring(d)}
-- case: cmsgpack_unpack_ints
return {cmsgpack.unpack('\204\255\205\1\0\206\0\1\0\0\208\128\209\255\0\210\128\0\0\0\255\224')}
-- case: cmsgpack_unpack_u64
local a, b = cmsgpack.unpack('\207\255\255\255\255\255\255\255\255\211\128\0\0\0\0\0\0\0') return {tostring(a), tostring(b)}
-- case: cmsgpack_unpack_floats
local a, b = cmsgpack.unpack('\202\64\73\15\219\203\64\9\33\251\84\68\45\24') return {tostring(a), tostring(b)}
-- case: cmsgpack_unpack_strs
return {cmsgpack.unpack('\217\3abc\218\0\2de\219\0\0\0\1f\163ghi')}
-- case: cmsgpack_unpack_map
local t = cmsgpack.unpack('\130\161a\1\161b\146\2\3') return {t.a, t.b[1], t.b[2]}
-- case: cmsgpack_unpack_map16
local t = cmsgpack.unpack('\222\0\1\1\2') return t[1]
-- case: cmsgpack_unpack_array32
local t = cmsgpack.unpack('\221\0\0\0\2\1\2') return t
-- case: cmsgpack_unpack_missing
return cmsgpack.unpack('\146\1')
-- case: cmsgpack_unpack_badfmt
return cmsgpack.unpack('\193')
-- case: cmsgpack_unpack_bin
return cmsgpack.unpack('\196\1a')
-- case: cmsgpack_unpack_huge_header
return cmsgpack.unpack('\221\255\255\255\255')
-- case: cmsgpack_unpack_huge_str
return cmsgpack.unpack('\219\255\255\255\255abc')
-- case: cmsgpack_unpack_nil_key
return cmsgpack.unpack('\129\192\1')
-- case: cmsgpack_unpack_nan_key
return cmsgpack.unpack('\129\203\255\248\0\0\0\0\0\0\1')
-- case: cmsgpack_unpack_nil_values
local t = cmsgpack.unpack('\147\1\192\3') return {t[1], t[2] == nil, t[3]}
-- case: cmsgpack_unpack_empty
return {cmsgpack.unpack('')}
-- case: cmsgpack_unpack_noarg
return cmsgpack.unpack()
-- case: cmsgpack_unpack_deep
return cmsgpack.unpack(string.rep('\145', 5000) .. '\1')
-- case: cmsgpack_unpack_deep_ok
local t = cmsgpack.unpack(string.rep('\145', 3000) .. '\1') return type(t)
-- case: cmsgpack_unpack_deep_map
return type(cmsgpack.unpack(string.rep('\129\1', 3000) .. '\1'))
-- case: cmsgpack_unpack_many
return #{cmsgpack.unpack(string.rep('\1', 8000))}
-- case: cmsgpack_unpack_many_ok
return #{cmsgpack.unpack(string.rep('\1', 7990))}
-- case: cmsgpack_unpack_one
return {cmsgpack.unpack_one('\1\2\3')}
-- case: cmsgpack_unpack_one_offset
return {cmsgpack.unpack_one('\1\2\3', 2)}
-- case: cmsgpack_unpack_one_end
return {cmsgpack.unpack_one('\1\2\3', 3)}
-- case: cmsgpack_unpack_one_past
return {cmsgpack.unpack_one('\1\2\3', 4)}
-- case: cmsgpack_unpack_one_neg
return {cmsgpack.unpack_one('\1\2\3', -1)}
-- case: cmsgpack_unpack_limit
return {cmsgpack.unpack_limit('\1\2\3\4', 2)}
-- case: cmsgpack_unpack_limit_offset
return {cmsgpack.unpack_limit('\1\2\3\4', 2, 3)}
-- case: cmsgpack_unpack_limit_zero
return {cmsgpack.unpack_limit('\1\2\3\4', 0)}
-- case: cmsgpack_unpack_limit_zero_offset
return {cmsgpack.unpack_limit('\1\2\3\4', 0, 2)}
-- case: cmsgpack_unpack_limit_noarg
return cmsgpack.unpack_limit('\1')
-- case: cmsgpack_unpack_limit_neg
return cmsgpack.unpack_limit('\1', -1)
-- case: cmsgpack_meta
return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}
-- case: bit_basic
return {bit.tobit(0xffffffff), bit.tobit(2^32 + 1), bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(0xff, 0x0f)}
-- case: bit_shifts
return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.lshift(1, 33), bit.rol(7, 0), bit.ror(7, 32)}
-- case: bit_bswap
return {bit.bswap(0x12345678), bit.bswap(-1)}
-- case: bit_tohex
return {bit.tohex(255), bit.tohex(-1), bit.tohex(255, 2), bit.tohex(255, -4), bit.tohex(0x12345678, 12), bit.tohex(1, 0)}
-- case: bit_fractions
return {bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(1e20), bit.tobit(-2^31), bit.tobit("0x10"), bit.tobit(" 12 ")}
-- case: bit_nan_inf
return {bit.tobit(1/0), bit.tobit(-1/0), bit.tobit(0/0)}
-- case: bit_bad_arg
return bit.band(1, "x")
-- case: bit_nil_arg
return bit.tobit()
-- case: bit_zero_string
return bit.tobit("0")
-- case: bit_tohex_int_min
return {bit.tohex(1, -2^31), bit.tohex(-1, 2^31)}
-- case: bit_tohex_nil
return bit.tohex(1, nil)
-- case: struct_pack_ints
return struct.pack('>bBhHiIlL', -1, 255, -2, 65535, -3, 4294967295, -4, 2^53)
-- case: struct_pack_little
return struct.pack('<hiL', 258, 16909060, 1)
-- case: struct_pack_sizes
return {struct.pack('i1i2i3i5i8', 1, 2, 3, 5, 8), struct.pack('>i12', -1), struct.pack('<I16', 1)}
-- case: struct_pack_floats
return {struct.pack('>fd', 1.5, 0.1), struct.pack('<d', -0.0)}
-- case: struct_pack_strings
return {struct.pack('c3', 'abcdef'), struct.pack('c0', 'xyz'), struct.pack('s', 'hi'), struct.pack('c2s', 'ab', '')}
-- case: struct_pack_short
return struct.pack('c5', 'ab')
-- case: struct_pack_align
return {struct.pack('!4 b i', 1, 2), struct.pack('! b d', 1, 2), struct.pack('!2 b h b i', 1, 2, 3, 4), struct.pack('xbx', 7)}
-- case: struct_pack_bad_align
return struct.pack('!3 b', 1)
-- case: struct_pack_bad_option
return struct.pack('z', 1)
-- case: struct_pack_too_big
return struct.pack('i33', 1)
-- case: struct_pack_overflow
return struct.pack('c99999999999', 'x')
-- case: struct_pack_missing
return struct.pack('ii', 1)
-- case: struct_pack_out_of_range
return {struct.pack('>L', 2^64), struct.pack('>L', -1), struct.pack('>l', 2^63), struct.pack('>B', 256), struct.pack('>b', -129), struct.pack('>i', 1.9), struct.pack('>i', -1.9)}
-- case: struct_pack_nan
return struct.pack('>L', 0/0)
-- case: struct_unpack_ints
return {struct.unpack('>bBhHiIlL', struct.pack('>bBhHiIlL', -1, 255, -2, 65535, -3, 4294967295, -4, 2^40))}
-- case: struct_unpack_big
return {struct.unpack('>i12', '\255\255\255\255\255\255\255\255\255\255\255\254'), struct.unpack('<I9', '\1\0\0\0\0\0\0\0\1')}
-- case: struct_unpack_floats
local a, b, n = struct.unpack('>fd', struct.pack('>fd', 1.5, 0.1)) return {tostring(a), tostring(b), n}
-- case: struct_unpack_strings
return {struct.unpack('c2sc0', 'abhi\0' .. 'xyz')}
-- case: struct_unpack_c0_prev
return {struct.unpack('bc0', '\3abcd')}
-- case: struct_unpack_c0_noprev
return struct.unpack('c0', 'abc')
-- case: struct_unpack_unfinished
return struct.unpack('s', 'abc')
-- case: struct_unpack_short
return struct.unpack('i', 'ab')
-- case: struct_unpack_offset
return {struct.unpack('b', 'abc', 2), struct.unpack('b', 'abc', 3)}
-- case: struct_unpack_offset_zero
return struct.unpack('b', 'abc', 0)
-- case: struct_unpack_offset_neg
return struct.unpack('b', 'abc', -1)
-- case: struct_unpack_offset_past
return struct.unpack('b', 'abc', 4)
-- case: struct_unpack_align
return {struct.unpack('!4 b i', struct.pack('!4 b i', 1, 2))}
-- case: struct_size
return {struct.size('bhilfd'), struct.size('!4 b i'), struct.size('i7c3'), struct.size('z'), struct.size('>!8 b d')}
-- case: struct_size_s
return struct.size('s')
-- case: struct_size_c0
return struct.size('c0')
-- case: struct_size_bad
return struct.size('?')
-- case: struct_nul_format
return struct.pack('b\0b', 1, 2)
-- case: struct_noargs
return struct.pack()
-- case: redis_sha1hex
return {redis.sha1hex(''), redis.sha1hex('abc'), redis.sha1hex(123)}
-- case: redis_sha1hex_noarg
return redis.sha1hex()
-- case: redis_log
redis.log(redis.LOG_WARNING, 'from a script', 1) redis.log(redis.LOG_DEBUG, 'x') return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}
-- case: redis_log_bad_level
return redis.log(9, 'x')
-- case: redis_log_one_arg
return redis.log(1)
-- case: redis_log_not_number
return redis.log('x', 'y')
-- case: redis_set_repl
redis.set_repl(redis.REPL_ALL) redis.set_repl(redis.REPL_NONE) return {redis.REPL_ALL, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_SLAVE, redis.REPL_NONE}
-- case: redis_set_repl_bad
return redis.set_repl(99)
-- case: redis_set_repl_noarg
return redis.set_repl()
-- case: redis_replicate_commands
return redis.replicate_commands()
-- case: redis_breakpoint_debug
return {redis.breakpoint(), redis.debug('x')}
-- case: redis_setresp
redis.setresp(3) redis.setresp(2) return redis.setresp(3)
-- case: redis_setresp_bad
return redis.setresp(4)
-- case: redis_setresp_noarg
return redis.setresp()
-- case: env_redis_setresp_get_missing
redis.setresp(3) local v = redis.call('get', 'no-such-key-lua-libs') return {tostring(v == nil), type(v)}
-- case: env_redis_resp2_get_missing
local v = redis.call('get', 'no-such-key-lua-libs') return {v == false, type(v)}
-- case: redis_version_type
return {type(redis.REDIS_VERSION), type(redis.REDIS_VERSION_NUM)}
-- case: env_redis_blpop_refused
return redis.call('blpop', 'no-such-list-lua-libs', 0)
-- case: env_redis_blpop_pcall
local r = redis.pcall('blpop', 'no-such-list-lua-libs', 0) return r
-- case: env_redis_eval_refused
return redis.pcall('eval', 'return 1', 0)
-- case: libs_globals
return {type(cjson), type(cmsgpack), type(bit), type(struct)}
