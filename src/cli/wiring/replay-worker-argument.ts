/**
 * The argument a worker thread of `wh replay --workers` is started with: main.ts then runs the
 * worker (cli/wiring/replay-worker.ts), never a command. Not a flag: no command line can hold it before a
 * command's name, and the worker refuses to run outside a worker thread.
 */
export const REPLAY_WORKER_ARGUMENT = "\u0000wh-replay-worker";
