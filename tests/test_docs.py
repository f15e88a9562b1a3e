"""The docs are true to the CLI: every `autotune` command they show, and every option they name,
exists in the click command tree; the README's command table lists every command; links resolve;
nothing points outside the repository. A renamed or removed option fails here, not in a user's
terminal."""

from __future__ import annotations

import re
from pathlib import Path

import click

from autotune.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md", ROOT / "launchers" / "README.md",
         *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "docs" / "evidence").glob("*.md"))]  # the measurements behind the claims

# Options of other programs that the docs name in backticks without the program in front.
OTHER_PROGRAMS_OPTIONS = {
    "--mca", "--map-by", "--bind-to", "--signal", "--mpi", "--export", "--requeue", "--time",
    "--resources", "--no-binary", "--target", "--no-cache-dir", "--test", "--mpich", "-np",
    "-msglog", "-msglen", "-npmin", "-iter", "-sync", "-mem", "-off_cache", "-l", "--oversubscribe",
    "-warm_up", "-imb_barrier", "-zero_size", "-iter_policy",
    "-n", "-ppn", "-hosts", "-genv", "-N", "--nodes", "--ntasks-per-node", "-x", "--host",
    "--hostfile", "-c", "-m", "-k", "-q", "--rank-by", "--report-bindings", "--core-spec",
    "--distribution", "--cpu-bind", "--hint", "--env",
}
# The benchmark scripts' own options (the docs name them next to the figures they print).
SCRIPT_OPTIONS = {option for script in (ROOT / "scripts").glob("*.py")
                  for option in re.findall(r"add_argument\(\s*\"(--?[\w-]+)\"", script.read_text())}


def command_tree() -> dict[tuple[str, ...], set[str]]:
    """Every command path (groups too) with the options it takes, --help included."""
    tree: dict[tuple[str, ...], set[str]] = {}

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        options = {"--help", "-h"}
        for param in command.params:
            options.update(o for o in [*param.opts, *param.secondary_opts] if o.startswith("-"))
        tree[path] = options
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))

    walk(cli, ())
    return tree


TREE = command_tree()
ALL_OPTIONS = set().union(*TREE.values())
TOP_COMMANDS = {path[0] for path in TREE if len(path) == 1}


def code_spans(text: str) -> list[tuple[int, str]]:
    """(line number, code) for every fenced block line (continuations joined) and every inline
    span, also one that wraps onto the next line."""
    spans: list[tuple[int, str]] = []
    fenced = False
    pending, pending_line = "", 0
    prose: list[tuple[int, str]] = []

    def flush_prose() -> None:
        if not prose:
            return
        first, joined = prose[0][0], "\n".join(line for _, line in prose)
        for match in re.finditer(r"`([^`]+)`", joined):
            spans.append((first + joined.count("\n", 0, match.start()), match.group(1).replace("\n", " ")))
        prose.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            flush_prose()
            fenced = not fenced
            continue
        if fenced:
            if not pending:
                pending_line = number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            spans.append((pending_line, pending + line))
            pending = ""
        elif line.strip() and not line.lstrip().startswith("|"):
            prose.append((number, line))
        else:
            flush_prose()
            if line.lstrip().startswith("|"):
                spans.extend((number, span) for span in re.findall(r"`([^`]+)`", line))
    flush_prose()
    return spans


def invocations(code: str) -> list[list[str]]:
    """The autotune command lines inside one piece of code, as tokens (comments dropped, the
    program's own arguments after `--` dropped)."""
    code = re.sub(r"(^|\s)#.*$", "", code)
    found = []
    for part in re.split(r"&&|\|\||;|\$\(|\)|\|\s+(?=\S+/|grep|less|head|tail|jq|sort)", code):
        tokens = [t.strip("[]") for t in part.split() if t.strip("[]")]
        while tokens and (tokens[0] in {"$", "time", "sudo"} or "=" in tokens[0]):
            tokens = tokens[1:]
        if not tokens:
            continue
        head = tokens[0].rsplit("/", 1)[-1]
        if head == "autotune":
            tokens = tokens[1:]
        elif head not in TOP_COMMANDS or len(tokens) < 2 or not tokens[1].startswith("-"):
            continue  # prose like `start` or `export` alone names a command, checked elsewhere
        if "--" in tokens:
            tokens = tokens[:tokens.index("--")]
        found.append(tokens)
    return found


def resolve(tokens: list[str]) -> tuple[tuple[str, ...], list[str]]:
    path: tuple[str, ...] = ()
    rest = list(tokens)
    while rest and (*path, rest[0]) in TREE:
        path = (*path, rest.pop(0))
    options = [t.split("=", 1)[0].rstrip(",.:") for t in rest if re.fullmatch(r"--?[a-z][\w-]*(=.*)?[,.:]?", t)]
    return path, options


def doc_problems() -> list[str]:
    problems = []
    for page in PAGES:
        rel = page.relative_to(ROOT)
        for number, code in code_spans(page.read_text()):
            stripped = code.strip()
            if re.fullmatch(r"--?[a-z][\w-]*(?:[ =]\S+)?", stripped):
                option = re.split(r"[ =]", stripped)[0]
                if option not in ALL_OPTIONS | OTHER_PROGRAMS_OPTIONS | SCRIPT_OPTIONS:
                    problems.append(f"{rel}:{number}: option {option} is no autotune option")
                continue
            for tokens in invocations(code):
                path, options = resolve(tokens)
                if tokens and not path:
                    if tokens[0] != "...":
                        problems.append(f"{rel}:{number}: `autotune {tokens[0]}` is no command")
                    continue
                for option in options:
                    if option not in TREE[path]:
                        problems.append(f"{rel}:{number}: `autotune {' '.join(path)}` has no {option}")
    return problems


def test_every_command_and_option_named_in_the_docs_exists():
    problems = doc_problems()
    assert not problems, "\n".join(problems)


def test_the_checker_finds_a_removed_option_and_a_missing_command(tmp_path):
    assert resolve("campaign status --format json".split()) == (("campaign", "status"), ["--format"])
    assert invocations("autotune start --collective allreduce -- lmp --in x") == \
        [["start", "--collective", "allreduce"]]
    path, options = resolve("history --study x --nonsense 1".split())
    assert path == ("history",) and "--nonsense" in options and "--nonsense" not in TREE[path]
    assert resolve("bogus --x".split())[0] == ()
    assert code_spans("see `autotune history\n--nonsense x` and\n\n```bash\nautotune best \\\n  --study s\n```") == \
        [(1, "autotune history --nonsense x"), (5, "autotune best    --study s")]


def readme_table_commands() -> set[tuple[str, ...]]:
    rows = re.findall(r"^\|\s*`autotune ([a-z ]+?)(?: [\[<A-Z-].*?)?`", (ROOT / "README.md").read_text(), re.M)
    return {tuple(row.split()) for row in rows}


def test_the_readme_command_table_lists_every_command():
    listed = readme_table_commands()
    runnable = {path for path, command in TREE.items() if path and not (
        isinstance(_command(path), click.Group) and not _command(path).invoke_without_command)}
    assert runnable - listed == set(), f"commands without a line in README's table: {runnable - listed}"
    assert listed - set(TREE) == set(), f"README's table names commands that do not exist: {listed - set(TREE)}"


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def test_links_resolve_and_nothing_points_outside_the_repository():
    problems = []
    for page in PAGES:
        rel = page.relative_to(ROOT)
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            if not (page.parent / target).resolve().exists():
                problems.append(f"{rel}: link to {target}, which does not exist")
        for pattern in (r"\.\./shared", r"/work/", r"\bseeds/0", r"\bissues? #?\d+", r"\bwave \d"):
            for match in re.finditer(pattern, text, re.I):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{rel}:{line}: points outside the repository: {match.group(0)!r}")
    assert not problems, "\n".join(problems)


def test_the_docs_index_names_every_page_and_examples_readme_every_file():
    index = (ROOT / "docs" / "index.md").read_text()
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if p.name != "index.md" and f"({p.name})" not in index]
    assert not missing, f"docs/index.md does not name {missing}"
    examples = (ROOT / "examples" / "README.md").read_text()
    unnamed = [p.name for p in (ROOT / "examples").iterdir() if p.name != "README.md" and p.name not in examples]
    assert not unnamed, f"examples/README.md does not say what {unnamed} are for"


def test_the_readme_says_truly_which_commands_take_study_name_and_storage():
    text = " ".join((ROOT / "README.md").read_text().split())
    said = re.search(r"Every command has `--help`\. (.*?) take `--study NAME`.*?the campaign commands "
                     r"take `--name` and `--storage`; (.*?) read no study\.", text)
    assert said, "README no longer says which commands take --study, --name and --storage"
    study_commands = [tuple(c.split()) for c in re.findall(r"`([a-z ]+)`", said.group(1))]
    no_study = [tuple(c.split()) for c in re.findall(r"`([a-z ]+)`", said.group(2))]
    for path in study_commands:
        assert {"--study", "--storage"} <= TREE[path], f"autotune {' '.join(path)} lacks --study/--storage"
    for path, options in TREE.items():
        if path[:1] == ("campaign",) and path != ("campaign",):
            assert {"--name", "--storage"} <= options and "--study" not in options, path
    for path in no_study:
        leaves = [p for p in TREE if p[:len(path)] == path]
        assert leaves and all("--study" not in TREE[p] and "--storage" not in TREE[p] for p in leaves), path
    named = set(study_commands) | set(no_study)
    unnamed = {p for p in TREE if len(p) == 1 and p[0] != "campaign"
               and not any(p[:len(n)] == n or n[:1] == p for n in named)}
    assert not unnamed, f"README does not say whether {unnamed} take --study"
