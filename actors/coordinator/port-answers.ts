// Both ends of a port that carries requests by id and answers them one by one: the submit port
// (submit-link.ts, submit-serve.ts) and the shared writer's ports (write-link.ts, write-serve.ts).
// Whatever one end has ready in one event-loop turn, each with its id, leaves in one message
// (the answers of a serving end, the shared writer's requests); the asking end keeps whoever
// waits for each id and hands each answer to its waiter, reporting an answer that is not well
// formed or that no one waits for.

import type { MessagePort } from 'node:worker_threads';
import { oncePerTurn } from '../../src/turn-flush.js';

/**
 * `send(id, value)` joins this turn's message, which `message(ids, values)` builds. A message that
 * cannot be posted (a value that cannot cross) goes to `notSent` with its ids; without it, the
 * error is thrown.
 */
export function sendPerTurn<V>(
  port: MessagePort,
  message: (ids: number[], values: V[]) => unknown,
  notSent?: (ids: readonly number[], error: unknown) => void,
): (id: number, value: V) => void {
  let ids: number[] = [];
  let values: V[] = [];
  const send = oncePerTurn(() => {
    const out = message(ids, values);
    const sent = ids;
    ids = [];
    values = [];
    try {
      port.postMessage(out);
    } catch (error) {
      if (notSent === undefined) throw error;
      notSent(sent, error);
    }
  });
  return (id, value) => {
    ids.push(id);
    values.push(value);
    send();
  };
}

/** The asking end: every waiter by the id its answer carries back. */
export class WaitingById<W> {
  private nextId = 1;
  private readonly byId = new Map<number, W>();

  /** Registers `waiter` and answers its new id. */
  add(waiter: W): number {
    const id = this.nextId++;
    this.byId.set(id, waiter);
    return id;
  }

  /** Forgets `id` and answers who waited for it. */
  take(id: number): W | undefined {
    const waiter = this.byId.get(id);
    this.byId.delete(id);
    return waiter;
  }

  /** Forgets every waiter and answers them, for a port that closed. */
  takeAll(): W[] {
    const all = [...this.byId.values()];
    this.byId.clear();
    return all;
  }

  /**
   * One message of answers, of kind `expected`: `message.ids[i]` answered by `values[i]`, each
   * handed to its waiter with `settle`. A message of another kind, one whose lists do not pair up,
   * or an id no one waits for, goes to `malformed` (a programmer's error), in words naming what a
   * value and a waiter are.
   */
  answered<V>(
    message: { readonly kind: unknown; readonly ids?: readonly number[] },
    expected: string,
    values: readonly V[] | undefined,
    words: { readonly value: string; readonly waiter: string },
    settle: (waiter: W, value: V) => void,
    malformed: (detail: string) => void,
  ): void {
    const ids = message.ids;
    if (message.kind !== expected || ids === undefined || values === undefined || ids.length !== values.length) {
      malformed(`a message of kind ${JSON.stringify(message.kind)} with ${ids?.length} ids and ${values?.length} ${words.value}s`);
      return;
    }
    for (const [i, id] of ids.entries()) {
      const waiter = this.take(id);
      if (waiter === undefined) malformed(`an ${words.value} for id ${id}, which no ${words.waiter} waits for`);
      else settle(waiter, values[i] as V);
    }
  }
}
