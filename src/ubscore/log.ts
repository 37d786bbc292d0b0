// The UBSCore thread's one logger: structured lines on stderr like every other thread's, named
// `ubscore`. The thread reads no logging configuration, so it writes `warn` and above only: each
// line it writes is one an operator needs to see (a dropped message, a failed write, a rebuild).

import { createLogger } from '../log.js';

export const logger = createLogger({ level: 'warn', name: 'ubscore' });
