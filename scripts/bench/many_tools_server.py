"""A stdio MCP server with many tools, shaped like a real tracker, chat or wiki server, for the
tool-catalogue benchmark (catalogue_bench.py): ``python many_tools_server.py tracker``.

Each tool has a realistic description and JSON schema (ids, filters, bodies, enums); calling one
returns what it was called with. Nothing here reaches the network.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 1}


def _p(desc: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**(schema or _STR), "description": desc}


_REPO = {
    "owner": _p("the account or organisation that owns the repository"),
    "repo": _p("the repository's name"),
}
_PAGE = {
    "page": _p("page number of the results, from 1", _INT),
    "per_page": _p("results per page (at most 100)", {"type": "integer", "maximum": 100}),
}
_STATE = _p("filter by state", {"type": "string", "enum": ["open", "closed", "all"]})

KINDS: dict[str, tuple[str, dict[str, tuple[str, dict[str, Any], list[str]]]]] = {
    "tracker": (
        "Issues, pull requests, milestones and labels of a code host's repositories.",
        {
            "create_issue": (
                "Open a new issue in a repository, with a title, a Markdown body, assignees and labels.",
                {
                    **_REPO,
                    "title": _p("the issue's title"),
                    "body": _p("the issue's description, in Markdown"),
                    "assignees": _p("user names to assign", {"type": "array", "items": _STR}),
                    "labels": _p("label names to add", {"type": "array", "items": _STR}),
                    "milestone": _p("the milestone number", _INT),
                },
                ["owner", "repo", "title"],
            ),
            "get_issue": (
                "Read one issue: title, body, state, labels, assignees and counts.",
                {**_REPO, "issue_number": _p("the issue's number", _INT)},
                ["owner", "repo", "issue_number"],
            ),
            "update_issue": (
                "Change an issue's title, body, state, labels, assignees or milestone.",
                {
                    **_REPO,
                    "issue_number": _p("the issue's number", _INT),
                    "title": _p("the new title"),
                    "body": _p("the new body"),
                    "state": _p("open or closed", {"type": "string", "enum": ["open", "closed"]}),
                    "labels": _p("the labels it should have", {"type": "array", "items": _STR}),
                    "assignees": _p("who it is assigned to", {"type": "array", "items": _STR}),
                },
                ["owner", "repo", "issue_number"],
            ),
            "list_issues": (
                "List a repository's issues, filtered by state, labels, assignee and time, newest first.",
                {
                    **_REPO,
                    "state": _STATE,
                    "labels": _p("comma-separated label names"),
                    "assignee": _p("a user name, none or *"),
                    "since": _p("only issues updated after this ISO 8601 time"),
                    "sort": _p(
                        "sort key", {"type": "string", "enum": ["created", "updated", "comments"]}
                    ),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
            "search_issues": (
                "Search issues and pull requests across repositories with the code host's query syntax.",
                {"query": _p("the search query, e.g. 'is:open label:bug repo:o/r'"), **_PAGE},
                ["query"],
            ),
            "add_issue_comment": (
                "Add a Markdown comment to an issue or pull request.",
                {**_REPO, "issue_number": _p("the number", _INT), "body": _p("the comment")},
                ["owner", "repo", "issue_number", "body"],
            ),
            "list_issue_comments": (
                "List the comments on an issue or pull request, oldest first.",
                {**_REPO, "issue_number": _p("the number", _INT), **_PAGE},
                ["owner", "repo", "issue_number"],
            ),
            "create_pull_request": (
                "Open a pull request from a head branch into a base branch.",
                {
                    **_REPO,
                    "title": _p("the title"),
                    "head": _p("the branch with the changes"),
                    "base": _p("the branch to merge into"),
                    "body": _p("the description, in Markdown"),
                    "draft": _p("open as a draft", {"type": "boolean"}),
                },
                ["owner", "repo", "title", "head", "base"],
            ),
            "get_pull_request": (
                "Read one pull request: branches, state, mergeability, reviewers, checks summary.",
                {**_REPO, "pull_number": _p("the pull request's number", _INT)},
                ["owner", "repo", "pull_number"],
            ),
            "list_pull_requests": (
                "List a repository's pull requests, filtered by state, base and head branch.",
                {
                    **_REPO,
                    "state": _STATE,
                    "base": _p("base branch"),
                    "head": _p("head user:branch"),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
            "get_pull_request_diff": (
                "The unified diff of a pull request.",
                {**_REPO, "pull_number": _p("the number", _INT)},
                ["owner", "repo", "pull_number"],
            ),
            "create_review": (
                "Review a pull request: approve, request changes or comment, with line comments.",
                {
                    **_REPO,
                    "pull_number": _p("the number", _INT),
                    "event": _p(
                        "the verdict",
                        {"type": "string", "enum": ["APPROVE", "REQUEST_CHANGES", "COMMENT"]},
                    ),
                    "body": _p("the review's summary"),
                    "comments": _p(
                        "line comments",
                        {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "path": _p("file path"),
                                    "line": _p("line in the new file", _INT),
                                    "body": _p("the comment"),
                                },
                                "required": ["path", "line", "body"],
                            },
                        },
                    ),
                },
                ["owner", "repo", "pull_number", "event"],
            ),
            "merge_pull_request": (
                "Merge a pull request with a merge commit, squash or rebase.",
                {
                    **_REPO,
                    "pull_number": _p("the number", _INT),
                    "merge_method": _p(
                        "how", {"type": "string", "enum": ["merge", "squash", "rebase"]}
                    ),
                    "commit_title": _p("the merge commit's title"),
                },
                ["owner", "repo", "pull_number"],
            ),
            "list_labels": ("List a repository's labels.", {**_REPO, **_PAGE}, ["owner", "repo"]),
            "create_label": (
                "Create a label with a colour and a description.",
                {
                    **_REPO,
                    "name": _p("label name"),
                    "color": _p("hex colour without #"),
                    "description": _p("what it means"),
                },
                ["owner", "repo", "name"],
            ),
            "list_milestones": (
                "List a repository's milestones with their due dates and progress.",
                {**_REPO, "state": _STATE, **_PAGE},
                ["owner", "repo"],
            ),
            "create_milestone": (
                "Create a milestone with a due date.",
                {
                    **_REPO,
                    "title": _p("the title"),
                    "due_on": _p("ISO 8601 due date"),
                    "description": _p("what it covers"),
                },
                ["owner", "repo", "title"],
            ),
            "list_commits": (
                "List commits on a branch or path, newest first.",
                {
                    **_REPO,
                    "sha": _p("branch or commit"),
                    "path": _p("only commits touching it"),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
            "get_file_contents": (
                "Read a file or a directory listing at a ref.",
                {**_REPO, "path": _p("the path"), "ref": _p("branch, tag or commit")},
                ["owner", "repo", "path"],
            ),
            "list_workflow_runs": (
                "List CI workflow runs, filtered by branch, status and event.",
                {
                    **_REPO,
                    "branch": _p("branch"),
                    "status": _p(
                        "run status",
                        {
                            "type": "string",
                            "enum": ["queued", "in_progress", "completed", "failure"],
                        },
                    ),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
        },
    ),
    "chat": (
        "Channels, threads and messages of the team's chat.",
        {
            "post_message": (
                "Post a message to a channel, or reply in a thread when thread_ts is given.",
                {
                    "channel": _p("channel id or #name"),
                    "text": _p("the message, in the chat's Markdown"),
                    "thread_ts": _p("the parent message's timestamp, to reply in its thread"),
                    "unfurl_links": _p("expand link previews", {"type": "boolean"}),
                },
                ["channel", "text"],
            ),
            "update_message": (
                "Edit a message the agent posted.",
                {
                    "channel": _p("channel id"),
                    "ts": _p("the message's timestamp"),
                    "text": _p("new text"),
                },
                ["channel", "ts", "text"],
            ),
            "delete_message": (
                "Delete a message the agent posted.",
                {"channel": _p("channel id"), "ts": _p("the message's timestamp")},
                ["channel", "ts"],
            ),
            "get_channel_history": (
                "Read a channel's recent messages, newest first, between two times.",
                {
                    "channel": _p("channel id"),
                    "oldest": _p("only after this timestamp"),
                    "latest": _p("only before this timestamp"),
                    "limit": _p("at most this many", _INT),
                },
                ["channel"],
            ),
            "get_thread_replies": (
                "Read every reply in a thread.",
                {"channel": _p("channel id"), "thread_ts": _p("the parent message's timestamp")},
                ["channel", "thread_ts"],
            ),
            "list_channels": (
                "List channels the agent can see, with topic, purpose and member count.",
                {
                    "types": _p("public_channel, private_channel, im or mpim, comma-separated"),
                    "exclude_archived": _p("leave out archived channels", {"type": "boolean"}),
                    "limit": _p("at most this many", _INT),
                },
                [],
            ),
            "search_messages": (
                "Search messages with the chat's query syntax (in:#channel from:@user before:date).",
                {"query": _p("the search query"), "count": _p("results", _INT)},
                ["query"],
            ),
            "add_reaction": (
                "Add an emoji reaction to a message.",
                {"channel": _p("channel id"), "ts": _p("the message"), "name": _p("emoji name")},
                ["channel", "ts", "name"],
            ),
            "get_user_profile": (
                "Read a user's profile: name, title, time zone, status.",
                {"user": _p("user id")},
                ["user"],
            ),
            "list_users": (
                "List the workspace's users, with their display names and whether they are bots.",
                {"limit": _p("at most this many", _INT), "cursor": _p("pagination cursor")},
                [],
            ),
            "set_channel_topic": (
                "Set a channel's topic.",
                {"channel": _p("channel id"), "topic": _p("the new topic")},
                ["channel", "topic"],
            ),
            "upload_file": (
                "Share a text file in a channel, optionally in a thread.",
                {
                    "channels": _p("channel ids, comma-separated"),
                    "content": _p("the file's text"),
                    "filename": _p("its name"),
                    "title": _p("its title"),
                    "thread_ts": _p("thread to share it in"),
                },
                ["channels", "content"],
            ),
        },
    ),
    "wiki": (
        "Pages, spaces and comments of the team's wiki.",
        {
            "search_pages": (
                "Full-text search across the wiki, optionally within one space.",
                {
                    "query": _p("words to find"),
                    "space": _p("space key"),
                    "limit": _p("at most", _INT),
                },
                ["query"],
            ),
            "get_page": (
                "Read a page's body (as Markdown), version, labels and ancestors.",
                {"page_id": _p("the page's id"), "version": _p("a past version", _INT)},
                ["page_id"],
            ),
            "create_page": (
                "Create a page in a space, under a parent page.",
                {
                    "space": _p("space key"),
                    "title": _p("the title"),
                    "body": _p("the body, in Markdown"),
                    "parent_id": _p("the parent page's id"),
                    "labels": _p("labels", {"type": "array", "items": _STR}),
                },
                ["space", "title", "body"],
            ),
            "update_page": (
                "Replace a page's body; the version must be the current one (a conflict is refused).",
                {
                    "page_id": _p("the page's id"),
                    "version": _p("the version being replaced", _INT),
                    "title": _p("the title"),
                    "body": _p("the new body, in Markdown"),
                    "minor_edit": _p("do not notify watchers", {"type": "boolean"}),
                },
                ["page_id", "version", "body"],
            ),
            "list_spaces": (
                "List the wiki's spaces.",
                {
                    "type": _p(
                        "global or personal", {"type": "string", "enum": ["global", "personal"]}
                    )
                },
                [],
            ),
            "get_page_children": (
                "List a page's child pages.",
                {"page_id": _p("the page's id"), "limit": _p("at most", _INT)},
                ["page_id"],
            ),
            "add_page_comment": (
                "Comment on a page, or reply to a comment.",
                {
                    "page_id": _p("the page"),
                    "body": _p("the comment"),
                    "parent_comment_id": _p("reply to"),
                },
                ["page_id", "body"],
            ),
            "list_page_comments": (
                "List a page's comments, with their replies.",
                {"page_id": _p("the page"), "limit": _p("at most", _INT)},
                ["page_id"],
            ),
            "get_page_history": (
                "List a page's versions with their authors and messages.",
                {"page_id": _p("the page"), "limit": _p("at most", _INT)},
                ["page_id"],
            ),
            "add_page_labels": (
                "Add labels to a page.",
                {
                    "page_id": _p("the page"),
                    "labels": _p("labels", {"type": "array", "items": _STR}),
                },
                ["page_id", "labels"],
            ),
        },
    ),
}


def main() -> None:
    import anyio
    import mcp_types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    kind = sys.argv[1] if len(sys.argv) > 1 else "tracker"
    about, tools = KINDS[kind]

    async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(
            tools=[
                mcp_types.Tool(
                    name=name,
                    description=desc,
                    input_schema={"type": "object", "properties": props, "required": req},
                )
                for name, (desc, props, req) in tools.items()
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> mcp_types.CallToolResult:
        text = json.dumps({"tool": params.name, "arguments": params.arguments or {}})
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])

    server = Server(
        f"bench-{kind}", instructions=about, on_list_tools=list_tools, on_call_tool=call_tool
    )

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
