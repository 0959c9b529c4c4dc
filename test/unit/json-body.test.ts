import { expect } from 'chai';
import { PLAIN_MIN, jsonBody, largeBodiesInFlight, registerLargeBody, registeredPlainStrings } from '../../src/json-body.js';
import { parseDataUrl } from '../../src/providers/shared.js';

/** A client body with one base64 image of `bytes` bytes, as the OpenAI SDK sends it. */
function visionBody(bytes = 200_000, fill = 7) {
  const url = `data:image/png;base64,${Buffer.alloc(bytes, fill).toString('base64')}`;
  const body = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url, detail: 'auto' } }] }] };
  const raw = Buffer.from(JSON.stringify(body));
  const parsed = JSON.parse(raw.toString()) as typeof body;
  // the strings of 64 K characters and more, as the lean path's nesting walk notes them
  return { url, raw, parsed, large: [parsed.messages[0].content[1].image_url!.url] };
}
const bytesOf = (v: string | Buffer) => (typeof v === 'string' ? Buffer.from(v) : v);

describe('unit: upstream JSON bodies with a client\'s large strings written straight in (src/json-body.ts)', () => {
  afterEach(() => {
    expect(registeredPlainStrings()).to.equal(0);
    expect(largeBodiesInFlight()).to.equal(0);
  });

  it('registers the large strings of an all-ASCII body without a backslash (a data URL with its base64 part), until released', () => {
    const { raw, large } = visionBody();
    const release = registerLargeBody(raw, large)!;
    expect(release).to.be.a('function');
    expect(registeredPlainStrings()).to.equal(2);
    expect(largeBodiesInFlight()).to.equal(1);
    const again = registerLargeBody(raw, [JSON.parse(raw.toString()).messages[0].content[1].image_url.url])!; // a second request with the same image
    expect(registeredPlainStrings()).to.equal(2);
    release();
    release(); // once only
    expect(registeredPlainStrings()).to.equal(2);
    again();
  });

  it('a body without a large string is not counted; one with a non-ASCII byte or a backslash is counted with no string registered', () => {
    const small = { a: 'x'.repeat(1000) };
    expect(registerLargeBody(Buffer.from(JSON.stringify(small)), [])).to.equal(undefined);
    const many = { messages: Array.from({ length: 200 }, (_, i) => ({ role: 'user', content: `message ${i} `.repeat(40) })) };
    expect(Buffer.byteLength(JSON.stringify(many))).to.be.greaterThan(PLAIN_MIN);
    expect(registerLargeBody(Buffer.from(JSON.stringify(many)), [])).to.equal(undefined); // 100 KB of short messages
    expect(largeBodiesInFlight()).to.equal(0);
    const bodies = ['café', 'a \\n b', 'a \\" b'].map((text) => `{"text":"${text}","image":"${'x'.repeat(PLAIN_MIN)}"}`); // an accent, an escaped new line, an escaped quote
    for (const rawText of bodies) {
      const release = registerLargeBody(Buffer.from(rawText), [JSON.parse(rawText).image])!;
      expect(release, rawText.slice(0, 20)).to.be.a('function');
      expect(registeredPlainStrings()).to.equal(0);
      expect(largeBodiesInFlight()).to.equal(1);
      release();
    }
  });

  it("without the body's proof, a large string is written straight in when the pattern finds it plain, and serialised when not", () => {
    const url = `data:image/png;base64,${Buffer.alloc(60_000, 3).toString('base64')}`;
    const client = { system: 'line one\nline two', image: url }; // a new line: the body proves nothing
    const raw = Buffer.from(JSON.stringify(client));
    const release = registerLargeBody(raw, [JSON.parse(raw.toString()).image])!;
    try {
      expect(registeredPlainStrings()).to.equal(0);
      const plainOut = jsonBody({ model: 'up', system: client.system, image: url });
      expect(Buffer.isBuffer(plainOut)).to.equal(true);
      expect((plainOut as Buffer).equals(Buffer.from(JSON.stringify({ model: 'up', system: client.system, image: url })))).to.equal(true);
      const big = 'z'.repeat(PLAIN_MIN);
      for (const odd of ['"', '\\', '\n', '\u0000', '\u007f', 'é', '☕', '\ud800']) {
        const body = { text: big + odd + big };
        const out = jsonBody(body);
        expect(out, JSON.stringify(odd)).to.equal(JSON.stringify(body)); // not plain: serialised as before
      }
      const mixed = { a: big + '"', b: url }; // one of each: the plain one straight in, the other serialised
      const out = jsonBody(mixed);
      expect(Buffer.isBuffer(out)).to.equal(true);
      expect((out as Buffer).equals(Buffer.from(JSON.stringify(mixed)))).to.equal(true);
    } finally {
      release();
    }
  });

  it('writes registered strings straight in: the same bytes as JSON.stringify, the value left as it was', () => {
    const { raw, parsed, url, large } = visionBody();
    const release = registerLargeBody(raw, large)!;
    try {
      // OpenAI-shaped: the client's own string; Anthropic- and Gemini-shaped: a slice of it, another string object
      const base64 = parseDataUrl(url)!.data;
      const bodies: unknown[] = [
        { model: 'up', stream: true, messages: parsed.messages },
        { model: 'up', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64 } }, { type: 'text', text: 'é ☕ "q" \\ \n' }] }] },
        { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: base64 } }, { inlineData: { mimeType: 'image/png', data: base64 } }] }] },
        [url, 'tail'],
      ];
      for (const body of bodies) {
        const before = JSON.stringify(body);
        const out = jsonBody(body);
        expect(Buffer.isBuffer(out)).to.equal(true);
        expect((out as Buffer).equals(Buffer.from(before))).to.equal(true);
        expect(JSON.stringify(body)).to.equal(before); // the placeholders were put back
      }
      expect(parsed.messages[0].content[1].image_url!.url).to.equal(url);
    } finally {
      release();
    }
  });

  it('falls back to JSON.stringify when nothing is registered, when a registered string cannot be swapped, or is not serialised where found', () => {
    const { raw, parsed, url, large } = visionBody();
    const plainBody = { model: 'up', messages: parsed.messages };
    expect(jsonBody(plainBody)).to.equal(JSON.stringify(plainBody)); // nothing registered: the string itself
    const release = registerLargeBody(raw, large)!;
    try {
      const frozen = { model: 'up', image: Object.freeze({ url }) };
      const out = jsonBody(frozen);
      expect(out).to.be.a('string'); // fell back
      expect(bytesOf(out).equals(Buffer.from(JSON.stringify(frozen)))).to.equal(true);
      expect(frozen.image.url).to.equal(url);
      const custom = { model: 'up', part: { url, toJSON: () => ({ replaced: true }) } };
      expect(jsonBody(custom)).to.equal(JSON.stringify(custom)); // the placeholder never appears: fell back
      expect(custom.part.url).to.equal(url);
      const other = { text: 'y\n'.repeat(PLAIN_MIN) }; // large, not registered, not plain
      expect(jsonBody(other)).to.equal(JSON.stringify(other));
    } finally {
      release();
    }
  });

  it('parseDataUrl reads the part before the comma as the pattern before it did, and slices the data', () => {
    const old = (u: string) => { const m = /^data:([^;,]+)((?:;[^;,]+)*);base64,(.*)$/s.exec(u); return m ? { mimeType: m[1], data: m[3] } : undefined; };
    const cases = ['data:image/png;base64,AAAA', 'data:image/png;name=a.png;base64,AA\nAA', 'data:image/png,AAAA', 'data:;base64,AAAA', 'data:image/png;base64;base64,AA',
      'https://example.com/a.png', 'data:image/png;base64', 'data:image/png;base64,', 'data:image/png;charset=x;base64,a,b', 'data:a,b;base64,c', 'DATA:image/png;base64,AA', 'data:image/png;;base64,AA'];
    for (const c of cases) expect(parseDataUrl(c), c).to.deep.equal(old(c));
  });
});
