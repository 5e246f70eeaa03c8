const {Tokenizer} = require('@anush008/tokenizers');
const fs = require('fs');
(async () => {
  const [file, textsFile] = process.argv.slice(2);
  const t = Tokenizer.fromFile(file);
  const texts = JSON.parse(fs.readFileSync(textsFile, 'utf8'));
  const out = [];
  for (const text of texts) {
    const a = await t.encode(text, null, {addSpecialTokens: false});
    const b = await t.encode(text, null, {addSpecialTokens: true});
    const ids = Array.from(a.getIds());
    const dec = await t.decode(ids, true);
    const decKeep = await t.decode(ids, false);
    out.push({text, ids, ids_with_special: Array.from(b.getIds()), decoded: dec, decoded_keep_special: decKeep});
  }
  process.stdout.write(JSON.stringify(out));
})();
