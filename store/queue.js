// A queue that runs async calls one at a time: each after every earlier
// one has settled, whether it resolved or rejected.
export function serialQueue() {
  let tail = Promise.resolve();
  return (fn) => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => {});
    return run;
  };
}
