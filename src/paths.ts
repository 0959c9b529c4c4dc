/**
 * The project root (the folder with package.json), found from this module's location whether it runs from
 * src/ through tsx or bundled into dist/; data files (spec, seeds) are found from there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'spec'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('cannot find the project root (package.json beside spec/)');
    dir = up;
  }
}

export const ROOT = findRoot();
