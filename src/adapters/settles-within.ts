/**
 * Whether `promise` settles, fulfilled or rejected, within `ms` of wall-clock time: for a stop or a
 * close that must end for its caller however long what it waits on takes. The timer is cleared
 * either way, so it never holds the process.
 */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
