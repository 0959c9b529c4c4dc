import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway } from './test/support/app.js';
const gw = await startTestGateway();
const { key } = await gw.newKey(10);
const server = gw.app.listen(0, '127.0.0.1'); await new Promise((r) => server.once('listening', r));
const port = (server.address() as AddressInfo).port;
const b = 'fuzzboundary';
const body = Buffer.concat([Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`), Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.from(`\r\n--${b}--\r\n`)]);
for (const path of ['/v1/audio/transcriptions?log_security_violations=x&log_security_violations=-7.835677746070167e%2B207', '/v1/audio/transcriptions']) {
  await new Promise<void>((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent: false, headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${b}`, 'content-length': String(body.length) } }, (res) => {
      let t = ''; res.on('data', (c) => (t += c)); res.on('end', () => { console.log(path.slice(0, 40), res.statusCode, t.slice(0, 200)); resolve(); });
    });
    req.on('error', (e) => { console.log('ERR', e.message); resolve(); });
    req.end(body);
  });
}
server.close(); await gw.close(); process.exit(0);
