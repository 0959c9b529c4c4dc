/**
 * Preloaded into the gateway by `npm run bench:profile` (`node --import`): V8's sampling profiler over a window the
 * benchmark chooses. SIGUSR2 starts it; the next SIGUSR2 stops it and writes the profile to PROFILE_OUT. So the
 * profile holds the measured load only, not the start-up (modules, the spec, the catalog) nor the warm-up.
 * PROFILE_INTERVAL_US: the sampling interval (default 100 µs). Plain JavaScript: it runs beside the bundle.
 */
import fs from 'node:fs';
import inspector from 'node:inspector';

const out = process.env.PROFILE_OUT;
const session = new inspector.Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US || 100) });
let running = false;
process.on('SIGUSR2', () => {
  if (!running) {
    running = true;
    session.post('Profiler.start');
    return;
  }
  running = false;
  session.post('Profiler.stop', (err, res) => {
    if (err) process.stderr.write(`profile-window: ${err.message}\n`);
    else if (out) {
      // written whole, then renamed: the benchmark reads it as soon as it appears
      fs.writeFileSync(`${out}.tmp`, JSON.stringify(res.profile));
      fs.renameSync(`${out}.tmp`, out);
    }
  });
});
