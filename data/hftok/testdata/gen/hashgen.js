// Prints, for each tokenizer file given, the count and sha256 of the ids of
// the whole text file (decimal ids joined by ","), without and with special tokens.
const {Tokenizer} = require('@anush008/tokenizers');
const fs = require('fs');
const crypto = require('crypto');
(async () => {
  const [textFile, ...files] = process.argv.slice(2);
  const text = fs.readFileSync(textFile, 'utf8');
  const out = {};
  for (const f of files) {
    const t = Tokenizer.fromFile(f);
    const r = {};
    for (const [k, special] of [["ids", false], ["ids_with_special", true]]) {
      const ids = Array.from((await t.encode(text, null, {addSpecialTokens: special})).getIds());
      r[k] = {count: ids.length, sha256: crypto.createHash('sha256').update(ids.join(',')).digest('hex')};
    }
    out[f.split('/').pop()] = r;
  }
  process.stdout.write(JSON.stringify(out, null, 1));
})();
