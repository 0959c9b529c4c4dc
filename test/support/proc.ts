/** Runs the project's own entry points (npm scripts' targets) as child processes, for end-to-end tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function runTs(script: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export interface RunningGateway {
  url: string;
  child: ChildProcess;
  logs: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `src/main.ts` (with `nodeArgs` given to node, e.g. npm start's `--no-memory-reducer`) and resolves when it logs that it is listening. It binds a port of its own choosing (PORT=0, unless
 * `env` names one) and the port is read from its "listening" line: a port found free here and handed to the process
 * could be taken by another before the process binds it (seen in CI: the demo's EADDRINUSE).
 */
export async function startGatewayProcess(env: Record<string, string>, nodeArgs: string[] = []): Promise<RunningGateway> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(ROOT, 'src/main.ts')], {
    cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0', ...env },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const port = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`gateway did not start:\n${out}`)), 20_000);
    const check = () => {
      const line = out.split('\n').slice(0, -1).find((l) => l.includes('gateway listening')); // whole lines only
      if (line) { clearTimeout(t); resolve((JSON.parse(line) as { port: number }).port); }
    };
    child.stdout!.on('data', check);
    child.on('exit', (code) => { clearTimeout(t); reject(new Error(`gateway exited with ${code}:\n${out}`)); });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    logs: () => out,
    stop: (signal = 'SIGTERM') => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode);
      child.once('exit', (code) => resolve(code));
      child.kill(signal);
    }),
  };
}
