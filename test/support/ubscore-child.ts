// A UBSCore in a process of its own, for a test that kills it with SIGKILL (a power cut):
// `node ubscore-child.js <walDir> <count> <userId>` sends `count` deposits of 1 to `userId`
// and writes each acknowledged reqId on its own line of stdout (a pipe: written synchronously on
// Linux, as Node documents for pipes), the moment its `applied` answer arrives. A line the parent
// reads is a reply the core gave; the kill comes whenever the parent chooses, writes in flight.

import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';

const [walDir, countText, userText] = process.argv.slice(2);
if (walDir === undefined || countText === undefined || userText === undefined) {
  process.stderr.write('usage: ubscore-child.js <walDir> <count> <userId>\n');
  process.exit(2);
}
const core = await startUbsCore({ walDir, batchMax: 256 });
const client = new UbsClient(core.connect(), { batchMax: 128 });
process.stdout.write('ready\n');
const sends = Array.from({ length: Number(countText) }, (_, i) =>
  client
    .send({ kind: 'transfer_op', op: 'DEPOSIT', reqId: `t${i}`, userId: BigInt(userText), asset: 'BTC', amount: 1n }, 5_000)
    .then((result) => {
      if (result?.kind === 'applied' && !result.duplicate) process.stdout.write(`t${i}\n`);
      else if (result !== null) process.stdout.write(`unexpected ${JSON.stringify(result)}\n`);
    }),
);
await Promise.all(sends);
process.stdout.write('done\n');
// The parent kills this process; should it finish first, it waits to be killed.
setInterval(() => undefined, 60_000);
