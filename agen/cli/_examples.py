"""Examples for every command's ``--help`` (agen/cli/_help.py adds them), by command path.

Each example is a line a user can type as is, after ``agen init`` and ``agen up`` (a deployment
called ``hello`` made from the hello template). tests/unit/test_cli_help.py checks that every
command has some.
"""

from __future__ import annotations

EXAMPLES: dict[tuple[str, ...], list[str]] = {
    (): ["agen init hello && agen up", "agen run hello 'Say hi'", "agen ps", "agen tui"],
    ("version",): ["agen version", "agen --version", "agen version --json"],
    ("doctor",): ["agen doctor", "agen doctor --json"],
    ("init",): [
        "agen init hello",
        "agen init --list",
        "agen init triage --template approval-triage",
        "agen init bot --model openai/gpt-4o-mini",
    ],
    ("up",): [
        "agen up",
        "agen up --listen 127.0.0.1:7081 --gateway-listen 127.0.0.1:7082 --headless",
        "agen up --capacity 8",
    ],
    ("down",): ["agen down", "agen down --timeout 2m", "agen down --force", "agen down --json"],
    ("call",): [
        "agen call default/hello 'Say hi'",
        "agen call hello 'And now in French' --context 3f1c2a9e-…",
        "agen call default/hello 'Say hi' --json | jq .status.state",
        "agen call default/hello 'Summarise the week' --timeout 10m",
        "agen call https://agents.example.com/a2a/triage 'Sort these' --token \"$THEIR_TOKEN\"",
    ],
    ("resolve",): [
        "agen resolve default/hello",
        "agen resolve hello --json | jq .card.skills",
        'agen resolve https://agents.example.com/a2a/triage --token "$THEIR_TOKEN"',
    ],
    ("deploy",): [
        "agen deploy ./hello",
        "agen deploy ./hello --validate",
        "agen deploy ./hello --name hello-2 --replicas 2",
    ],
    ("scale",): ["agen scale hello 3"],
    ("ps",): ["agen ps", "agen ps -A", "agen ps --all --no-trunc", "agen ps --json"],
    ("logs",): ["agen logs hello", "agen logs hello -f"],
    ("stop",): ["agen stop hello", "agen stop hello --hold-runs --in 30m --reason 'deploying'"],
    ("start",): ["agen start hello"],
    ("rm",): ["agen rm hello"],
    ("run",): [
        "agen run hello 'Summarise README.md'",
        "agen run ./hello 'Say hi'              # deploy the folder first",
        "agen run hello 'nightly report' --in 2h --no-wait",
        "agen run hello 'Say hi' --json | jq .outcome",
    ],
    ("wait",): ["agen wait 01JD8ZQ5K3 --timeout 5m", "agen wait K3M4P9 --json"],
    ("cancel",): [
        "agen cancel 01JD8ZQ5K3",
        "agen cancel 01JD8ZQ5K3 --tree --mode graceful --grace 30s",
    ],
    ("migrate",): [
        "agen migrate --to postgres://agen@db.example.lan/agen --dry-run",
        "agen migrate --to postgres://agen@db.example.lan/agen --drain",
        "agen migrate --to sqlite:$HOME/agen-backup.db --from postgres://agen@db.example.lan/agen",
    ],
    ("tree",): ["agen tree 01JD8ZQ5K3", "agen tree K3M4P9 --json"],
    ("hub",): ["agen hub serve --listen 127.0.0.1:7070"],
    ("hub", "serve"): [
        "agen hub serve --listen 127.0.0.1:7070",
        "agen hub serve --tls --listen 0.0.0.0:7070 --tls-host hub.example.lan",
    ],
    ("nest",): ["agen nest run --hub http://127.0.0.1:7070 --store sqlite:$HOME/.agen/agen.db"],
    ("nest", "run"): [
        "agen nest run --hub http://127.0.0.1:7070 --store sqlite:$HOME/.agen/agen.db --join-token agen_…",
        "agen nest run --hub https://hub.example.lan:7070 --ca-hash sha256:9f2c… --store postgres://…",
        "agen nest run --hub https://hub.example.lan:7070 --ca-hash sha256:9f2c… "
        "--store-for team-a=postgres://agen_host_a:…@db/agen --store-for-only",
    ],
    ("hub", "rotate-kek"): [
        "agen hub rotate-kek --store postgres://agen@db/agen  # AGEN_HUB_KEK_NEW_FILE=/etc/agen/kek.new",
    ],
    ("hub", "rotate-token-key"): [
        "agen hub rotate-token-key",
        "agen hub rotate-token-key --hub https://hub.example.lan:7070 --force --json",
    ],
    ("secret",): [
        'printf %s "$GITHUB_TOKEN" | agen secret set GITHUB_TOKEN --for hello',
        "agen secret ls",
    ],
    ("secret", "set"): [
        'printf %s "$GITHUB_TOKEN" | agen secret set GITHUB_TOKEN --for hello',
        "agen secret set GITHUB_TOKEN --for hello --for triage -n team-a",
    ],
    ("secret", "ls"): ["agen secret ls", "agen secret ls -n team-a --json"],
    ("secret", "rm"): ["agen secret rm GITHUB_TOKEN"],
    ("join-token",): ["agen join-token create --ttl 30m --label zone=a"],
    ("join-token", "create"): [
        "agen join-token create",
        "agen join-token create --ttl 30m --label zone=a",
    ],
    ("nests",): ["agen nests", "agen nests --json", "agen nests revoke nest-b"],
    ("nests", "revoke"): ["agen nests revoke nest-b"],
    ("store",): ["agen store host-role --store postgres://agen@db/agen  # AGEN_HOST_DB_PASSWORD=…"],
    ("store", "host-role"): [
        "agen store host-role --store postgres://agen@db/agen  # AGEN_HOST_DB_PASSWORD=…",
        "agen store host-role --store postgres://agen@db/agen --role agen_host_a --namespace a",
    ],
    ("pause",): ["agen pause 01JD8ZQ5K3 --in 1h --reason 'waiting for the release'"],
    ("resume",): ["agen resume 01JD8ZQ5K3"],
    ("tasks",): [
        "agen tasks",
        "agen tasks hello --state failed",
        "agen tasks --scheduled",
        "agen tasks --label team=ops --no-trunc",
    ],
    ("approvals",): [
        "agen approvals",
        "agen approvals --all",
        "agen approvals | cat",
        "agen approvals show 01JD8ZQ5K3",
    ],
    ("approvals", "show"): [
        "agen approvals show 01JD8ZQ5K3",
        "agen approvals show 01JD8ZQ5K3 --json",
    ],
    ("approve",): ["agen approve 01JD8ZR2V7 --note 'checked the command'"],
    ("deny",): ["agen deny 01JD8ZR2V7 --note 'do not delete that folder'"],
    ("whoami",): ["agen whoami", "agen whoami --hub https://hub.example.com --token $TOKEN"],
    ("triggers",): ["agen triggers hello", "agen triggers hello --limit 100 --json"],
    ("webhook-secret",): ["agen webhook-secret hello on-push"],
    ("providers",): [
        "agen providers",
        "agen providers resume default/openrouter:OPENROUTER_API_KEY",
    ],
    ("events",): [
        "agen events",
        "agen events hello -f",
        "agen events --type task. --severity warning",
        "agen events -f --json | jq -c .type",
    ],
    ("runs",): ["agen runs", "agen runs hello --status failed", "agen runs --roots --since 1h"],
    ("transcript",): ["agen transcript 01JD8ZQ5K3", "agen transcript 01JD8ZQ5K3 --system --json"],
    ("trace",): ["agen trace 01JD8ZQ5K3", "agen trace 01JD8ZQ5K3 --otlp-json > trace.json"],
    ("query",): ["agen query 01JD8ZQ5K3", "agen query 01JD8ZQ5K3 --json"],
    ("tui",): ["agen tui", "agen tui --hub http://127.0.0.1:7070"],
    ("ui",): [
        "agen ui",
        "agen ui --listen 127.0.0.1:9000",
        'agen ui --hub http://127.0.0.1:7070 --token "$AGEN_TOKEN"',
    ],
    ("replay",): [
        "agen replay 01JD8ZS0RN",
        "agen replay 01JD8ZS0RN --bundle ./hello --model bundle",
    ],
    ("eval",): [
        "agen eval ./hello",
        "agen eval ./hello --runs 5 --parallel 4",
        "agen eval compare ./hello-old ./hello",
        "agen eval history hello",
        'agen eval dataset add ./hello/x-agen/evals --from-feedback "score<0"',
    ],
    ("eval", "run"): [
        "agen eval run ./hello --runs 5 --json",
        "agen eval run ./hello --record",
        "agen eval run ./hello --store ./eval-runs.db",
    ],
    ("eval", "compare"): [
        "agen eval compare ./hello-old ./hello",
        "agen eval compare sha256:9f2c… ./hello --runs 3",
        "agen eval compare 01JD8ZS0RN 01JD8ZT1QX --json",
    ],
    ("eval", "history"): ["agen eval history hello", "agen eval history hello --json"],
    ("eval", "dataset"): [
        'agen eval dataset add ./hello/x-agen/evals --from-feedback "score<0"',
        "agen eval dataset add ./evals --deployment hello --since 24h",
    ],
    ("eval", "dataset", "add"): [
        'agen eval dataset add ./hello/x-agen/evals --from-feedback "score<0"',
        "agen eval dataset add ./evals --run 01JD8ZS0RN --run 01JD8ZT1QX --rubric 'answers the question'",
        "agen eval dataset add ./evals --deployment hello --since 24h --checks checks.json",
    ],
    ("token",): [
        "agen token create --scope operator --namespace default --ttl 720h",
        "agen token ls",
        "agen token revoke 01JD8ZS0RN4T6Y3M2XQ8VB7C5E",
    ],
    ("token", "create"): [
        "agen token create --scope viewer",
        "agen token create --scope operator --namespace team-a --ttl 720h --name ci",
        "agen token create --scope operator --on-behalf --deployment assistant --name assistant",
    ],
    ("token", "ls"): ["agen token ls", "agen token ls --all --json"],
    ("token", "revoke"): ["agen token revoke 01JD8ZS0RN4T6Y3M2XQ8VB7C5E"],
    ("mcp",): ["agen mcp workspace --root ./repo", "agen mcp sql --dsn-env DATABASE_URL"],
    ("mcp", "workspace"): [
        "agen mcp workspace --root ./repo",
        "agen mcp workspace --root ./repo --no-run",
    ],
    ("mcp", "sql"): ["agen mcp sql --dsn-env DATABASE_URL"],
    ("mcp", "login"): [
        "agen mcp login github --bundle ./mybot",
        "agen mcp login https://mcp.example.com/mcp --no-browser",
    ],
    ("mcp", "launch"): ["agen mcp launch -- python server.py"],
    ("notify",): ["agen notify set ops https://hooks.example.com/agen", "agen notify ls"],
    ("notify", "set"): [
        "agen notify set ops https://hooks.example.com/agen --severity warning",
        "agen notify set failures https://hooks.example.com/x --event task.failed",
    ],
    ("notify", "ls"): ["agen notify ls", "agen notify ls --json"],
    ("notify", "rm"): ["agen notify rm ops"],
    ("host",): ["agen host serve"],
    ("host", "serve"): ["agen host serve"],
    ("memory",): ["agen memory ls", "echo 'Be brief.' | agen memory set style"],
    ("memory", "ls"): ["agen memory ls", "agen memory ls --json"],
    ("memory", "show"): ["agen memory show style", "agen memory show style --version 2"],
    ("memory", "set"): [
        "echo 'Answer in English.' | agen memory set style",
        "agen memory set style --title 'House style' < style.md",
    ],
    ("memory", "history"): ["agen memory history style"],
    ("memory", "rollback"): ["agen memory rollback style --to 2"],
    ("artifacts",): ["agen artifacts ls", "agen artifacts get 01JD8ZT4A1 -o report.md"],
    ("artifacts", "ls"): ["agen artifacts ls", "agen artifacts ls 01JD8ZQ5K3"],
    ("artifacts", "get"): [
        "agen artifacts get 01JD8ZT4A1",
        "agen artifacts get 01JD8ZT4A1 -o out.md",
    ],
    ("feedback",): ["agen feedback record 01JD8ZQ5K3 --score 1", "agen feedback ls"],
    ("feedback", "record"): [
        "agen feedback record 01JD8ZQ5K3 --score 1",
        "agen feedback record 01JD8ZQ5K3 --score -0.5 --note 'missed the deadline' --label kind=late",
    ],
    ("feedback", "ls"): ["agen feedback ls", "agen feedback ls hello --since 24h --json"],
}
