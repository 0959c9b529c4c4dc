import { expect } from 'chai';
import { decodeUtf8, encodeUtf8 } from '../../src/utf8.js';

/** ~40 KB of JSON text made of `piece`, so both functions take their large-body way. */
const large = (piece: string) => JSON.stringify({ messages: Array.from({ length: 400 }, (_, i) => ({ role: 'user', content: `${i}: ${piece}` })) });

describe('unit: UTF-8 for large bodies (src/utf8.ts)', () => {
  const texts: Record<string, string> = {
    ascii: large('The quick brown fox jumps over the lazy dog, "quoted" \\ and\nnew lines.'),
    accents: large('café, naïve, Größe, señor, ½ and ©'),
    emoji: large('a coffee ☕, a face 😀, a flag 🇫🇷 and a family 👨‍👩‍👧'),
    chinese: large('记录的总数已经改变了吗？这是一个测试。'),
    mixed: large('Ελληνικά, русский, עברית, العربية, हिन्दी, 日本語, 한국어'),
    // noncharacters and the last code point are valid UTF-8 too (the NUL goes in escaped, as JSON writes it)
    edges: large('a\u0000b\ufffe\uffff\ufdd0\u{10ffff}\u{1f600}é'),
  };

  for (const [name, text] of Object.entries(texts)) {
    it(`${name}: decodes as toString('utf8') and encodes as Buffer.from`, () => {
      const bytes = Buffer.from(text);
      expect(bytes.length).to.be.greaterThan(16 * 1024);
      expect(decodeUtf8(bytes)).to.equal(text);
      const encoded = encodeUtf8(text);
      expect(Buffer.isBuffer(encoded)).to.equal(true);
      expect((encoded as Buffer).equals(bytes)).to.equal(true);
    });
  }

  it('a byte-order mark is kept, as toString keeps it', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(texts.emoji)]);
    expect(decodeUtf8(bytes)).to.equal(bytes.toString('utf8'));
    expect(decodeUtf8(bytes).charCodeAt(0)).to.equal(0xfeff);
  });

  it('invalid UTF-8 decodes exactly as toString does (its replacement characters)', () => {
    const bad = Buffer.concat([
      Buffer.from(texts.chinese),
      Buffer.from([0xc3, 0x28, 0xe2, 0x82, 0x63, 0xf0, 0x9f, 0x98, 0xff, 0xed, 0xa0, 0x80, 0xc0, 0xaf]),
      Buffer.from(texts.accents),
    ]);
    const decoded = decodeUtf8(bad);
    expect(decoded).to.equal(bad.toString('utf8'));
    expect(decoded).to.include('\ufffd');
  });

  it('small bodies are left to Node: the string handed on as it is', () => {
    expect(encodeUtf8('{"a":"☕"}')).to.equal('{"a":"☕"}');
    expect(decodeUtf8(Buffer.from('{"a":"☕"}'))).to.equal('{"a":"☕"}');
  });

  it('a lone surrogate is replaced as Buffer.from replaces it (U+FFFD)', () => {
    const text = texts.ascii + '\ud800' + texts.emoji + '\udfff';
    const encoded = encodeUtf8(text) as Buffer;
    expect(encoded.equals(Buffer.from(text))).to.equal(true);
    expect(encoded.includes(Buffer.from('\ufffd'))).to.equal(true);
  });

  it('a shorter string after a longer one gets only its own bytes (the reused buffer is not read past them)', () => {
    const long = encodeUtf8(texts.chinese) as Buffer;
    const short = encodeUtf8(texts.ascii) as Buffer;
    expect(short.equals(Buffer.from(texts.ascii))).to.equal(true);
    expect(long.equals(Buffer.from(texts.chinese))).to.equal(true); // a copy: not overwritten by the next call
  });

  it('a string over the reused buffer\'s cap is encoded whole, exactly its bytes', () => {
    const huge = 'é☕'.repeat(300 * 1024);
    const a = encodeUtf8(huge) as Buffer;
    expect(a.equals(Buffer.from(huge))).to.equal(true);
    expect(a.length).to.equal(Buffer.byteLength(huge));
    const base64 = '{"url":"data:image/png;base64,' + Buffer.alloc(600 * 1024, 7).toString('base64') + '"}';
    const b = encodeUtf8(base64) as Buffer;
    expect(b.equals(Buffer.from(base64))).to.equal(true);
    expect(a.equals(Buffer.from(huge))).to.equal(true); // not overwritten by the next one
  });
});
