// Debian's patroni, etcd-server and postgresql, installed with apt-get when one is missing (as
// test/system-pg.sh installs postgresql): Patroni 3.0.2, etcd 3.4.23 and PostgreSQL 15 on
// bookworm. The embedded PostgreSQL cannot serve under Patroni: its package has no pg_basebackup,
// pg_rewind or pg_controldata.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const PACKAGES = ['patroni', 'etcd-server', 'postgresql'];

/** The newest PostgreSQL server's bin directory of Debian's packages, or '' when none is installed. */
export function pgBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(`${root}/${v}/bin/pg_rewind`)) : [];
  const newest = versions.sort((a, b) => Number(a) - Number(b)).at(-1);
  return newest === undefined ? '' : `${root}/${newest}/bin`;
}

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Installs what is missing; throws, saying what to install, when that needs root and this is not. */
export async function installed(): Promise<void> {
  if (onPath('patroni') && onPath('etcd') && pgBinDir() !== '') return;
  if (process.getuid?.() !== 0)
    throw new Error(`patroni, etcd or PostgreSQL is missing, and installing needs root: apt-get install ${PACKAGES.join(' ')}`);
  process.stderr.write(`installing ${PACKAGES.join(', ')} (apt-get)\n`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', ...PACKAGES], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}
