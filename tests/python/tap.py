"""TAP lines for the Python test scripts: numbered "ok N - ..." / "not ok
N - ..." with the reason as "#" lines, skips as "ok N - ... # SKIP why"
(counted, never as passes), and the plan at the end."""
import sys


class Tap:
    def __init__(self):
        self.n = 0
        self.fails = 0

    def check(self, desc, ok, why=""):
        self.n += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", self.n, desc))
        if not ok:
            self.fails += 1
            for line in (str(why).splitlines() or [""])[:20]:
                print("# " + line)
        sys.stdout.flush()

    def skip(self, desc, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, desc, why))

    def done(self):
        """Prints the plan; the exit status for the script."""
        print("1..%d" % self.n)
        return 1 if self.fails else 0
