"""The client's models, guidance and requests checked against the
``/openapi.json`` the real askgate serves: every property of each schema is
a field of its model (and no field is one askgate does not describe),
the models' requests validate against the document's request schemas, and
askgate's real responses validate against its response schemas and parse
into the models with nothing left over."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from conftest import AGENT_TOKEN, Askgate, deploy_question
from pydantic import BaseModel

from askgate import TOOL_DESCRIPTION, TOOL_NAME, Client
from askgate.guidance import FIELD_DESCRIPTIONS
from askgate.models import (
    AgentInfo,
    AskQuestion,
    CreateQuestionRequest,
    Delivery,
    ErrorBody,
    ErrorDetail,
    Option,
    Question,
    QuestionRequest,
)


@pytest.fixture(scope="module")
def document(shared_askgate: Askgate) -> dict[str, Any]:
    reply = shared_askgate.http.get("/openapi.json")
    assert reply.status_code == 200, reply.text
    served: dict[str, Any] = reply.json()
    return served


def schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = document["components"]["schemas"][name]
    return found


def aliases(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def validator(document: dict[str, Any], ref: str) -> jsonschema.protocols.Validator:
    """A validator of ``ref`` (``#/components/schemas/X``) in the document."""
    root = {"$ref": ref, "components": document["components"]}
    return jsonschema.Draft202012Validator(root)


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("QuestionRequest", QuestionRequest),
        ("CreateQuestionRequest", CreateQuestionRequest),
        ("AskQuestion", AskQuestion),
        ("Question", Question),
        ("Delivery", Delivery),
    ],
)
def test_every_property_of_each_schema_is_a_field_of_its_model(
    document: dict[str, Any], name: str, model: type[BaseModel]
) -> None:
    properties = set(schema(document, name)["properties"])
    assert properties == aliases(model), f"{name}: the document and {model.__name__} differ"
    for required in schema(document, name).get("required", []):
        field = next(f for n, f in model.model_fields.items() if (f.alias or n) == required)
        # `to` is required by askgate, and filled in by the client when the
        # token has one recipient.
        assert field.is_required() or (name, required) in {
            ("QuestionRequest", "to"),
            ("CreateQuestionRequest", "to"),
            # Responses: lenient, so that an older askgate's resources parse.
            ("Delivery", "surface"),
            ("Delivery", "messages"),
        }, f"{name}.{required} is required"


def test_the_option_error_and_agent_schemas_match_their_models(document: dict[str, Any]) -> None:
    option = schema(document, "AskQuestion")["properties"]["options"]["items"]
    assert set(option["properties"]) == aliases(Option)
    error = schema(document, "Error")
    assert set(error["properties"]) == aliases(ErrorBody)
    assert set(error["properties"]["error"]["properties"]) == aliases(ErrorDetail)
    agent = document["paths"]["/v1/agent"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(agent["properties"]) == aliases(AgentInfo)


def test_the_guidance_is_the_documents(document: dict[str, Any]) -> None:
    assert document["paths"]["/v1/ask"]["post"]["operationId"] == TOOL_NAME
    assert document["paths"]["/v1/ask"]["post"]["description"] == TOOL_DESCRIPTION
    assert document["paths"]["/v1/questions"]["post"]["description"] == TOOL_DESCRIPTION
    request = schema(document, "QuestionRequest")["properties"]
    ask_question = schema(document, "AskQuestion")["properties"]
    served = {
        "questions": request["questions"]["description"],
        "timeoutSeconds": request["timeoutSeconds"]["description"],
        **{f"questions[].{name}": field["description"] for name, field in ask_question.items()},
        **{
            f"questions[].options[].{name}": field["description"]
            for name, field in ask_question["options"]["items"]["properties"].items()
        },
    }
    assert served == FIELD_DESCRIPTIONS
    # The models carry it into every schema made of them (the framework tools').
    described = AskQuestion.model_json_schema(by_alias=True)
    assert described["properties"]["options"]["description"] == FIELD_DESCRIPTIONS["questions[].options"]


def test_requests_validate_and_responses_parse_whole(document: dict[str, Any], askgate: Askgate) -> None:
    full = CreateQuestionRequest.model_validate(
        {
            "to": "me",
            "questions": [{**deploy_question(), "multiSelect": False}],
            "timeoutSeconds": 600,
            "sessionId": "s",
            "runId": "r",
            "sessionKind": "main",
            "toolCallId": "call-1",
            "remind": ["50%"],
            "escalate": [{"after": "5m", "to": "other"}],
        }
    )
    body = full.body()
    validator(document, "#/components/schemas/QuestionRequest").validate(body)
    validator(document, "#/components/schemas/CreateQuestionRequest").validate(body)
    # An escalation reaches a recipient in a chat, which this askgate has none of.
    del body["escalate"]

    question_schema = validator(document, "#/components/schemas/Question")
    with Client(askgate.base_url, AGENT_TOKEN) as client:
        raw = client._http.post(
            askgate.base_url + "/v1/questions", json=body, headers={"Authorization": f"Bearer {AGENT_TOKEN}"}
        )
        assert raw.status_code == 201, raw.text
        question_schema.validate(raw.json())
        parsed = Question.model_validate(raw.json())
        assert parsed.model_extra == {}, "fields the model does not know"
        assert parsed.reminders and parsed.reminders[0].sent_at is None and parsed.run_id == "r"
        askgate.answer_on_page(parsed.id, {"deploy_target": {"options": [0], "text": None}})
        ended = client._http.get(
            f"{askgate.base_url}/v1/questions/{parsed.id}", headers={"Authorization": f"Bearer {AGENT_TOKEN}"}
        ).json()
        question_schema.validate(ended)
        parsed = Question.model_validate(ended)
        assert parsed.model_extra == {}
        assert parsed.resolution is not None and parsed.resolution.model_extra == {}
        assert parsed.answered_by is not None and parsed.answered_by.model_extra == {}

        refused = client._http.post(
            askgate.base_url + "/v1/questions",
            json={"to": "me", "questions": [{"id": "X", "header": "", "question": "?", "options": []}]},
            headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
        )
        assert refused.status_code == 422
        validator(document, "#/components/schemas/Error").validate(refused.json())
        error = ErrorBody.model_validate(refused.json())
        assert error.model_extra == {} and error.error.model_extra == {}
        assert error.error.errors and len(error.error.errors) > 1

        agent = client.agent()
        assert agent.name == "one" and {r.name for r in agent.recipients} == {"me", "other"}
        assert agent.model_extra == {}
