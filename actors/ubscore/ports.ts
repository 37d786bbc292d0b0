// The UBSCore thread's clients: each one a MessagePort (a coordinator's, or the main thread's).
// Their packed requests (wire.ts) go to the engine (src/ubscore/engine.ts), which answers each
// batch on the port that asked, once durable.

import type { MessagePort } from 'node:worker_threads';
import type { RequestWire, UbsEngine } from '../../src/ubscore/engine.js';
import { logger } from '../../src/ubscore/log.js';
import type { UbsPortMessage } from '../protocol.js';
import { isPortMessage, postReplies, RequestUnpacker } from './wire.js';

export type PortEngine = UbsEngine<MessagePort, UbsPortMessage>;

export class UbsPorts {
  private readonly ports = new Set<MessagePort>();
  private readonly unpacker = new RequestUnpacker();

  /** How the engine reads a port's message and answers it. */
  readonly wire: RequestWire<MessagePort, UbsPortMessage> = {
    unpack: (message, take) => this.unpacker.unpack(message, take),
    answer: postReplies,
  };

  /** Serves `port` until it closes; a port that comes after the engine began to close is closed at once. */
  attach(engine: PortEngine, port: MessagePort): void {
    if (engine.closed) {
      port.close();
      return;
    }
    this.ports.add(port);
    port.on('message', (message: unknown) => {
      if (isPortMessage(message)) engine.receive(port, message);
      else logger.error('dropped a malformed port message');
    });
    port.on('close', () => this.ports.delete(port));
  }

  closeAll(): void {
    for (const port of this.ports) port.close();
  }
}
