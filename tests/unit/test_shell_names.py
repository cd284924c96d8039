"""The names a shell command uses, as the terminal view's grounding rule checks them."""

import pytest

from tasks.rules.shell_names import command_names, routes, script_names

CASES = [
    ("curl -sSf -G --data-urlencode team=growth --data-urlencode status=open,in_progress "
     "http://127.0.0.1:8080/tickets | python3 -c 'import json,sys; "
     "[print(t[\"id\"]) for t in json.load(sys.stdin)[\"tickets\"]]'",
     ["team", "growth", "status", "open", "in_progress", "tickets", "id"]),
    ("curl -sSf -X PUT -H 'Content-Type: application/json' -d '{\"user\": null}' "
     "http://127.0.0.1:8080/tickets/7/assignee", ["user", "tickets", "7", "assignee"]),
    ("curl -s 'http://127.0.0.1:8080/stats?by=team&status=open'",
     ["stats", "by", "team", "status", "open"]),
    ('sqlite3 shop.db "CREATE TABLE c AS SELECT orders.* FROM orders JOIN customers '
     "USING (customer_id) WHERE customers.city = 'Oslo'\"",
     ["shop.db", "c", "orders", "customers", "customer_id", "city"]),
    ('sqlite3 shop.db "SELECT group_concat(name, \', \') FROM (SELECT name FROM '
     "pragma_table_info('orders') ORDER BY cid)\"", ["shop.db"]),
    ('mkdir -p "$(dirname exports/t.csv)" && '
     'sqlite3 -csv shop.db "SELECT * FROM v" > exports/t.csv',
     ["shop.db", "v"]),
    ('sqlite3 shop.db ".import --csv incoming/s.csv imported"',
     ["shop.db", "incoming/s.csv", "imported"]),
    ("LC_ALL=C sort -u logs/app.log > out/sorted.txt 2>/dev/null", ["logs/app.log"]),
    ("awk 1 stock.tsv > stock.tsv.tmp && mv stock.tsv.tmp stock.tsv", ["stock.tsv"]),
    ("awk -F, -v col=city 'NR==1{print $1}' data/c.csv", ["data/c.csv"]),
    ("git diff --numstat main...work/topic -- src/app.py", ["main", "work/topic", "src/app.py"]),
    ("git log --format=%an -n 5 main --", []),
    ("printf '%s\\n' 42 > answer.txt", []),
    ("find * -type f | LC_ALL=C sort", []),
    ("sed -n '/^Records/,$p' SERVICE.md", ["SERVICE.md"]),
    ("echo 'unbalanced", []),
]


@pytest.mark.parametrize(("command", "names"), CASES)
def test_names_of_a_command(command, names):
    assert command_names(command) == names


def test_routes_name_the_method_segments_and_query_keys():
    assert routes(CASES[1][0]) == [["PUT", "tickets", "7", "assignee"]]
    assert routes(CASES[0][0]) == [["GET", "tickets", "team", "status"]]
    assert routes(CASES[2][0]) == [["GET", "stats", "by", "status"]]
    assert routes("curl -d '{}' http://h:1/users") == [["POST", "users"]]
    assert routes("cat SERVICE.md") == []


def test_a_here_document_uses_the_names_of_its_lines():
    """The body of a here-document is a script: each line's names, but not a file an
    earlier line wrote; the command's own line and what follows count too."""
    body = ("# out/x.txt is made below\nawk 1 data/a.csv > out/x.txt\n"
            "sort out/x.txt > out/y.txt\n\nsqlite3 shop.db \"SELECT * FROM orders\"")
    assert script_names(body) == ["data/a.csv", "shop.db", "orders"]
    command = f"mkdir -p solution && cat > solution/run.sh <<'END'\n{body}\nEND\ncat notes.md"
    assert command_names(command) == ["data/a.csv", "shop.db", "orders", "notes.md"]
