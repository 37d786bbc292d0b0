// `make run`: the process entry, on the main thread. It gives src/compose/run.ts the thread starters, so
// that src/ runs the service without knowing it is spread over threads.

import { run } from '../src/compose/run.js';
import { serviceThreads } from './threads.js';

run(serviceThreads);
