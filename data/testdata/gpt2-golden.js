// Writes gpt2-golden.json: GPT-2 token ids for texts that exercise the
// pre-tokenizer (whitespace runs, newlines, contractions, digits, Unicode),
// computed by the gpt-3-encoder@1.1.4 package (a port of OpenAI's
// encoder.py with its regex, lookahead included). Regenerate with
//   node data/testdata/gpt2-golden.js ~/.cache/memo/corpora/gpt2/package > data/testdata/gpt2-golden.json
const path = require('path')
const { encode } = require(path.resolve(process.argv[2]))

const texts = [
  'Hello world',
  ' Hello',
  'a b c',
  'a  b',
  'a   b',
  'end.  ',
  'a\nb',
  'a\n\nb',
  'a\n\n\nb',
  'a \nb',
  'a\n b',
  'a\t\tb',
  'a\r\n\r\nb',
  'Hello\n\n',
  'line one\n  indented\n\n\tTabbed\n',
  "I'm he's they'll we've you'd it's 'tis",
  'x \'s',
  'In 1999, 42 cats cost $3.50!!',
  'naïve café — “quoted” 東京 😀',
  '    four leading spaces',
  'trailing\n',
  'CHAPTER 1. Loomings.\n\nCall me Ishmael. Some years ago—never mind how long precisely—having\nlittle or no money in my purse,  and nothing particular to interest me on\nshore, I thought I would sail about a little and see the watery part of\nthe world.\n',
]
const cases = texts.map(text => ({ text, ids: encode(text) }))
process.stdout.write(JSON.stringify({
  generator: 'data/testdata/gpt2-golden.js with gpt-3-encoder@1.1.4 (npm), OpenAI GPT-2 regex with lookahead',
  cases,
}, null, 1) + '\n')
