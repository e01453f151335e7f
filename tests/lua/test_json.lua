-- The safetensors header's JSON reader (lua/moonflow/json.lua) against RFC 8259 by hand: values,
-- escapes, key order, and each malformed input refused with its byte position.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local json = require 'moonflow.json'

T.test('values, key order and nesting', function()
  local v = json.decode(' {"b": [1, -2.5e1, 0.25, 0], "a": {"t": true, "f": false, "n": null}, "s": ""} ')
  T.eq(table.concat(v[json.KEYS], ','), 'b,a,s', 'keys in document order')
  T.eq(#v.b, 4); T.eq(v.b[1], 1); T.eq(v.b[2], -25); T.eq(v.b[3], 0.25); T.eq(v.b[4], 0)
  T.eq(v.a.t, true); T.eq(v.a.f, false); T.eq(v.a.n, json.NULL)
  T.eq(v.s, '')
  T.eq(v.b[json.KEYS], nil, 'arrays carry no key list')
  T.eq(#json.decode('[]'), 0)
  T.eq(#json.decode('{}')[json.KEYS], 0)
  T.eq(json.decode('[[[]]]')[1][1][1], nil)
end)

T.test('string escapes, surrogate pairs to UTF-8', function()
  T.eq(json.decode([["a\"b\\c\/d\b\f\n\r\t"]]), 'a"b\\c/d\b\f\n\r\t')
  T.eq(json.decode([["\u00e9\u20ac"]]), '\195\169\226\130\172')          -- é €
  T.eq(json.decode([["\ud83d\ude00"]]), '\240\159\152\128')              -- U+1F600
  T.eq(json.decode('"\195\169 raw"'), '\195\169 raw', 'UTF-8 passes through')
end)

T.test('malformed input names the problem and the byte', function()
  local cases = {
    {'{"a":', 'unexpected end at byte 6'},
    {'{"a" 1}', "expected ':' after a key at byte 6"},
    {'{"a":1,}', 'expected a string key at byte 8'},
    {'{"a":1 "b":2}', "expected ',' or '}' in an object at byte 8"},
    {'[1 2]', "expected ',' or ']' in an array at byte 4"},
    {'{"a":1,"a":2}', "duplicate key 'a' at byte 8"},
    {'01', 'malformed number at byte 1'},
    {'1.', 'malformed number at byte 1'},
    {'1.e5', 'malformed number at byte 1'},
    {'1e', 'malformed number at byte 1'},
    {'-', 'malformed number at byte 1'},
    {'"\\x"', 'bad escape in a string at byte 2'},
    {'"\\u12"', 'bad \\u escape at byte 2'},
    {'"\\ud83d"', 'unpaired surrogate in \\u escape at byte 2'},
    {'"\\ude00"', 'unpaired surrogate in \\u escape at byte 2'},
    {'"a\1b"', 'control character in a string at byte 3'},
    {'"abc', 'unterminated string at byte 5'},
    {'tru', "unexpected character 't' at byte 1"},
    {'[1] x', 'trailing characters after the JSON value at byte 5'},
    {('['):rep(65) .. (']'):rep(65), 'nesting deeper than 64 levels at byte 65'},
  }
  for _, c in ipairs(cases) do
    local ok, err = pcall(json.decode, c[1])
    T.eq(ok, false, c[1])
    T.eq(type(err) == 'table' and err.json, c[2] .. ' of the header', c[1])
  end
  T.eq(#json.decode(('['):rep(64) .. (']'):rep(64)), 1, '64 levels are fine')
end)

T.test('string writer escapes what the reader needs escaped', function()
  local s = 'q"b\\s\n\1é'
  T.eq(json.string(s), '"q\\"b\\\\s\\u000a\\u0001é"')
  T.eq(json.decode(json.string(s)), s)
end)

T.finish()
