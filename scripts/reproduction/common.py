"""What every reproduction does: run the project's binaries (recording each command
line for commands.txt), log progress with the elapsed time, write gnuplot scripts and
render them, fill the results document's template."""

import os
import string
import subprocess
import sys
import time


class Runner:
    """Runs commands, stops the reproduction on the first failure, remembers what ran."""

    def __init__(self, name):
        self.name = name
        self.commands = []
        self.started = time.time()

    def log(self, message):
        print(f"{self.name} [{time.time() - self.started:6.1f}s] {message}", file=sys.stderr,
              flush=True)

    def run(self, args):
        words = [str(a) for a in args]
        self.commands.append(" ".join(words))
        done = subprocess.run(words, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{self.name}: {' '.join(words)} failed:\n{done.stderr}")
        return done.stdout

    def write_commands(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.commands) + "\n")


def clean_generated(out_dir, suffixes):
    """Empties `out_dir` of the files a previous run generated (every file there with
    one of `suffixes` is generated)."""
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.endswith(tuple(suffixes)):
            os.remove(os.path.join(out_dir, old))


def gnuplot_terminal():
    """pngcairo where gnuplot has it (antialiased), else png."""
    probe = subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True)
    return "pngcairo" if probe.returncode == 0 else "png"


class Gnuplot:
    """Writes <name>.gp into `out_dir` (runnable on its own there) and renders it."""

    def __init__(self, name, out_dir, terminal):
        self.name = name
        self.out_dir = out_dir
        self.terminal = terminal

    def font(self):
        return 'font "Sans,11"' if self.terminal == "pngcairo" else ""

    def render(self, plot, script):
        with open(os.path.join(self.out_dir, plot + ".gp"), "w") as f:
            f.write(f"# Regenerate: cd {self.out_dir} && gnuplot {plot}.gp\n" + script)
        done = subprocess.run(["gnuplot", plot + ".gp"], cwd=self.out_dir, capture_output=True,
                              text=True)
        if done.returncode != 0:
            sys.exit(f"{self.name}: gnuplot failed on {plot}.gp:\n{done.stderr}")


def fill_template(name, **fields):
    """The template scripts/reproduction/templates/<name> with its $fields filled in; a
    field the template names and the caller does not give is an error (KeyError)."""
    path = os.path.join(os.path.dirname(__file__), "templates", name)
    with open(path) as f:
        return string.Template(f.read()).substitute(fields)
