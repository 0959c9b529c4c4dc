/**
 * Redis reachability for /v1/status/detailed: one PING over a raw connection (AUTH first when the URL carries
 * credentials), so the status page needs no Redis client. Resolves false on any error or after `timeoutMs`.
 */
import net from 'node:net';
import tls from 'node:tls';

const bulk = (parts: string[]) => `*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`;

export function redisPing(url: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return resolve(false);
    }
    const port = Number(u.port || 6379);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const sock = u.protocol === 'rediss:' ? tls.connect({ host, port, servername: host }) : net.connect({ host, port });
    let done = false;
    let buf = '';
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    timer.unref();
    sock.once('error', () => finish(false));
    sock.once('close', () => finish(false));
    sock.once(u.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => {
      const user = decodeURIComponent(u.username);
      const pass = decodeURIComponent(u.password);
      if (pass) sock.write(bulk(user ? ['AUTH', user, pass] : ['AUTH', pass]));
      sock.write(bulk(['PING']));
    });
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      if (/(^|\r\n)-/.test(buf)) return finish(false); // an error reply (AUTH refused, NOAUTH)
      if (buf.includes('+PONG')) {
        clearTimeout(timer);
        finish(true);
      }
    });
  });
}
