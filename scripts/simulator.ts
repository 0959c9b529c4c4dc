/**
 * Runs the scripted upstream simulator as a process, for the demo and the benchmark:
 *
 *   npm run sim -- [--port 9100] [--api-key KEY]
 *
 * Prints its URL (`http://127.0.0.1:PORT`) on a line of its own once it listens, so a parent process can read
 * it; port 0 (the default) picks a free one. Listens on 127.0.0.1 only. Stops on SIGINT / SIGTERM.
 * What the model names do: see test/support/simulator.ts.
 */
import { startSimulator } from '../test/support/simulator.js';

const USAGE = 'usage: npm run sim -- [--port PORT] [--api-key KEY]';

function parseArgs(argv: string[]): { port: number; apiKey?: string } {
  let port = 0;
  let apiKey: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = inline ?? argv[++i];
    if (flag === '--port' && value !== undefined && /^\d{1,5}$/.test(value) && Number(value) <= 65535) port = Number(value);
    else if (flag === '--api-key' && value) apiKey = value;
    else throw new Error(`bad argument "${argv[i] ?? flag}"\n${USAGE}`);
  }
  return { port, apiKey };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  // A process serves until stopped (the benchmark sends it hundreds of thousands of requests): it keeps only the
  // most recent calls.
  const sim = await startSimulator({ ...opts, keepCalls: 1000 });
  process.stdout.write(`${sim.url}\n`);
  const stop = () => {
    sim.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
});
