#include "common/prompt/jinja.hpp"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <string_view>

using namespace lanes::common;

namespace {

// 2025-12-06 05:46:40 UTC
constexpr std::time_t fixed_now = 1765000000;

std::string render(std::string_view source, const nlohmann::ordered_json& context = {}) {
    return jinja_template::parse(source).render(
        context.is_null() ? nlohmann::ordered_json::object() : context, fixed_now);
}

struct jinja2_row {
    std::string_view name;
    std::string_view source;
    std::string_view expected;
};

constexpr std::string_view context_json =
    R"j({"s": "Hello World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": [1, "x"]}, "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "tool_calls": []}, {"role": "tool", "content": "r"}], "u": "  héllo wörld  ", "t": true, "none": null, "e": ""})j";

// Each row: what python3-jinja2 renders in transformers' environment (checked when written).
constexpr jinja2_row jinja2_rows[] =
    {
        {"values print as Python str()",
         R"j({{ s }}|{{ n }}|{{ f }}|{{ l }}|{{ d }}|{{ t }}|{{ none }}|{{ missing }})j",
         R"j(Hello World|7|2.5|[3, 1, 2]|{'b': 1, 'a': [1, 'x']}|True|None|)j"},
        {"arithmetic as Python",
         R"j({{ 1 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 1.5 * 2 }} {{ 10 / 5 }} {{ 1e20 }} {{ 0.0001 }} {{ 1e-5 }} {{ 0.1 + 0.2 }})j",
         R"j(0.5 3 -4 2 1024 3.0 2.0 1e+20 0.0001 1e-05 0.30000000000000004)j"},
        {"concatenation",
         R"j({{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] + [2, 3] }} {{ 'x' + 'y' }})j",
         R"j(a1None ababab [1, 2, 3] xy)j"},
        {"conditional expressions",
         R"j({{ 1 if t else 2 }} {{ 1 if not t else 2 }} {{ 'y' if missing }}|{{ t and 'a' or 'b' }} {{ e or 'empty' }})j",
         R"j(1 2 |a empty)j"},
        {"comparisons and in",
         R"j({{ 1 < 2 < 3 }} {{ 'b' > 'a' }} {{ [1, 2] == [1, 2] }} {{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' in 'cat' }} {{ 3 not in l }} {{ 'a' in d }})j",
         R"j(True True True True True True False True)j"},
        {"subscripts and slices",
         R"j({{ l[0] }} {{ l[-1] }} {{ l[1:] }} {{ l[::-1] }} {{ s[:5] }} {{ s[::-2] }} {{ u[1:4] }} {{ l[10] }}|{{ d.a[1] }} {{ d['b'] }} {{ msgs[0].role }})j",
         R"j(3 2 [1, 2] [2, 1, 3] Hello drWolH  hé |x 1 user)j"},
        {"loop variables",
         R"j({% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }} {% endfor %})j",
         R"j(10TrueFalse33 21FalseFalse32 32FalseTrue31 )j"},
        {"loop filter and else",
         R"j({% for x in l if x > 1 %}{{ x }}{{ loop.index }},{% else %}none{% endfor %}{% for x in [] %}a{% else %}empty{% endfor %})j",
         R"j(31,22,empty)j"},
        {"break and continue",
         R"j({% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %})j",
         R"j(0134)j"},
        {"dict iteration and methods",
         R"j({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{{ d.keys() | list }}{{ d.values() | list }}{{ d.get('zz', 'dflt') }}{{ d.get('b') }})j",
         R"j(b=1;a=[1, 'x'];ba['b', 'a'][1, [1, 'x']]dflt1)j"},
        {"scoping of set",
         R"j({% set x = 1 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}{% if t %}{% set y = 2 %}{% endif %}{{ y }})j",
         R"j(12)j"},
        {"namespace",
         R"j({% set ns = namespace(c=0, found=false) %}{% for i in l %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}{{ ns.found }})j",
         R"j(6False)j"},
        {"block set",
         R"j({% set block %}  inner {{ n }}
{% endset %}[{{ block }}]{% set up | upper %}abc{% endset %}{{ up }})j",
         R"j([  inner 7
]ABC)j"},
        {"macros",
         R"j({% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', punct='?') }})j",
         R"j(Hi Ann! Hi Bob?)j"},
        {"filter block", R"j({% filter upper %}shout {{ s }}{% endfilter %})j",
         R"j(SHOUT HELLO WORLD)j"},
        {"whitespace control",
         R"j(  {% if t %}
    yes
  {% endif %}
after
{# comment #}
  {#- c2 -#}  x  {{- s -}}  y
{%+ if t %}keep{% endif %})j",
         R"j(    yes
after
xHello Worldy
keep)j"},
        {"trim and lstrip blocks",
         R"j(a
  {{ s }}
  {% if t -%}
   b   
  {%- endif %}
c  
{% for i in l %}
  - {{ i }}
{% endfor %}
end
)j",
         R"j(a
  Hello World
bc  
  - 3
  - 1
  - 2
end)j"},
        {"string filters",
         R"j({{ u | trim }}|{{ s | length }}|{{ u | length }}|{{ l | count }}|{{ s | upper }}{{ s | lower }}|{{ 'hello wOrld-x(y' | title }}|{{ 'hELLO' | capitalize }}|{{ s | replace('o', '0') }})j",
         R"j(héllo wörld|11|15|3|HELLO WORLDhello world|Hello World-X(Y|Hello|Hell0 W0rld)j"},
        {"tojson",
         R"j({{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ 'é"\n' | tojson }}|{{ [1.0, 2.5, none, true] | tojson }}|{{ {} | tojson(indent=4) }}|{{ [] | tojson }})j",
         R"j({"b": 1, "a": [1, "x"]}|{
  "b": 1,
  "a": [
    1,
    "x"
  ]
}|"é\"\n"|[1.0, 2.5, null, true]|{}|[])j"},
        {"list filters",
         R"j({{ l | join(', ') }}|{{ l | sort | list }}|{{ l | sort(reverse=true) | join }}|{{ l | first }}{{ l | last }}|{{ l | min }}{{ l | max }}{{ l | sum }}|{{ [1, 1, 2] | unique | list }})j",
         R"j(3, 1, 2|[1, 2, 3]|321|32|136|[1, 2])j"},
        {"select and map",
         R"j({{ msgs | selectattr('role', 'equalto', 'user') | list | length }}{{ msgs | rejectattr('role', 'equalto', 'user') | map(attribute='role') | join(',') }}{{ l | select('odd') | list }}{{ l | reject('even') | list }}{{ msgs | selectattr('tool_calls', 'defined') | list | length }}{{ msgs | selectattr('tool_calls', 'undefined') | list | length }})j",
         R"j(1assistant,tool[3, 1][3, 1]12)j"},
        {"default and conversions",
         R"j({{ missing | default('dflt') }}{{ e | default('x') }}{{ e | default('x', true) }}{{ none | d('n') }}|{{ '42' | int + 1 }}{{ 'x' | int }}{{ '2.5' | float }}{{ 3.7 | int }}|{{ -3 | abs }}{{ 2.567 | round(1) }}{{ 2.5 | round }}|{{ d | dictsort }}|{{ d | items | list }})j",
         R"j(dfltxNone|4302.53|32.62.0|[('a', [1, 'x']), ('b', 1)]|[('b', 1), ('a', [1, 'x'])])j"},
        {"string methods",
         R"j({{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}|{{ '<x>'.startswith('<') }}{{ 'abc'.endswith(('z', 'c')) }}|[{{ '\n\nab\n'.strip('\n') }}][{{ 'xxaxx'.lstrip('x') }}][{{ 'xxaxx'.rstrip('x') }}]|{{ 'hello'.find('l') }}{{ 'hello'.count('l') }}{{ '-'.join(['a', 'b']) }}{{ 'ab cd'.title() }})j",
         R"j(['a', 'b', '', 'c']['a', 'b']['a', 'b c']|TrueTrue|[ab][axx][xxa]|22a-bAb Cd)j"},
        {"tests",
         R"j({{ n is odd }}{{ n is even }}{{ n is number }}{{ f is float }}{{ n is integer }}{{ t is boolean }}{{ t is true }}{{ t is false }}{{ none is none }}{{ s is string }}{{ d is mapping }}{{ l is iterable }}{{ s is sequence }}{{ n is iterable }}{{ missing is defined }}{{ missing is undefined }}{{ s is not none }}{{ n is divisibleby 7 }}{{ 2 is in l }}{{ none is sameas none }}{{ n is equalto 7 }})j",
         R"j(TrueFalseTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueFalseFalseTrueTrueTrueTrueTrueTrue)j"},
        {"strftime_now",
         R"j({{ '%d %b %Y' and strftime_now('%d %b %Y %H:%M') }}|{{ strftime_now is defined }})j",
         R"j(06 Dec 2025 05:46|True)j"},
        {"reprs of containers", R"j({{ (1, 2) }}{{ [l, d] }}{{ {'k': [none, true, 'it\'s']} }})j",
         R"j((1, 2)[[3, 1, 2], {'b': 1, 'a': [1, 'x']}]{'k': [None, True, "it's"]})j"},
        {"unary operators", R"j({{ -n }}{{ - 2 ** 2 }}{{ +n }}{{ not t }}{{ not missing }})j",
         R"j(-747FalseTrue)j"},
        {"range and dict",
         R"j({{ range(3) | list }}{{ range(1, 10, 3) | list }}{{ dict(a=1, b='x') }})j",
         R"j([0, 1, 2][1, 4, 7]{'a': 1, 'b': 'x'})j"},
        {"indent, wordcount, escape",
         R"j({{ 'abc' | indent(2) }}|{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(4, true) }}|{{ 'one two  three' | wordcount }}|{{ '<a href="x">&' | e }})j",
         R"j(abc|a
  b

  c|    a
    b|3|&lt;a href=&#34;x&#34;&gt;&amp;)j"},
        {"if elif else",
         R"j({% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}{% if n > 50 %}big{% elif n > 5 %}mid{% else %}small{% endif %})j",
         R"j(bigmid)j"},
        {"map with a filter",
         R"j({{ l | map('string') | join('-') }}{{ ['a', 'b'] | map('upper') | list }}{{ msgs | map(attribute='content') | list }})j",
         R"j(3-1-2['A', 'B']['hi', 'yo', 'r'])j"},
        {"unicode",
         R"j({{ u | upper }}|{{ u.title() }}|{{ 'ÉCOLE dž'|lower }}|{{ 'élan vital' | capitalize }}|{{ 'élan-vital (ök)' | title }}|{{ u.strip() | length }}|{{ '　x '.strip() }}|{{ 'aé' * 2 }}|{{ 'añb'[1] }}{{ 'añb'[-1] }}|{{ 'añb' | list }})j", R"j(  HÉLLO WÖRLD  |  Héllo Wörld  |école dž|Élan vital|Élan-Vital (Ök)|11|x|aéaé|ñb|['a', 'ñ', 'b'])j"},
        {"chained comparisons and tuples",
         R"j({{ 3 > 2 > 1 }}{{ 1 < 3 > 2 }}{{ 1 == 1 != 2 }}{{ (1, 2) | list }}{{ (1,) }}{{ () }})j",
         R"j(TrueTrueTrue[1, 2](1,)())j"},
        {"tuple assignment", R"j({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }})j",
         R"j(12(1, 2))j"},
        {"attributes of strings and missing keys",
         R"j({{ msgs[0].content.content is defined }}{{ msgs[0]['items'] is defined }}{{ msgs[1].tool_calls | length }}{{ msgs | map(attribute='tool_calls') | list }})j",
         R"j(FalseTrue0[Undefined, [], Undefined])j"},
        {"previtem and nextitem",
         R"j({% for m in msgs %}{{ loop.previtem.role if loop.previtem is defined else '-' }}{{ loop.nextitem.role if loop.nextitem else '-' }} {% endfor %})j",
         R"j(-assistant usertool assistant- )j"},
        {"macro called in a loop",
         R"j({% macro m(x) %}[{{ x }}{% for i in l %}{{ i }}{% endfor %}]{% endmacro %}{% for i in [1, 2] %}{{ m(i) }}{% endfor %})j",
         R"j([1312][2312])j"},
        {"nested loops",
         R"j({% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{{ a }}{{ b }}{% if b == 3 %}{% continue %}{% endif %}|{% endfor %}{{ loop.index }};{% endfor %})j",
         R"j(113214|1;123224|2;)j"},
        {"raw blocks",
         R"j(a
  {% raw %}{{ not evaluated }} {% if %}{% endraw %}
b {%- raw -%}  x  {%- endraw -%}  c
  {% raw %}
  y
  {% endraw %}
d)j",
         R"j(a
{{ not evaluated }} {% if %}bxc

  y
d)j"},
        {"percent formatting",
         R"j({{ '%s and %s' % ('a', 1) }}|{{ '%d%%' % 42.9 }}|{{ '%5.2f|%-4s|%04d|%x' % (3.14159, 'é', 7, 255) }}|{{ '%r' % 'q' }}|{{ '%s' % [1, 2] }}|{{ '%s-%s' | format('a', none) }}|{{ '%.3s' % 'abcdef' }})j",
         R"j(a and 1|42%| 3.14|é   |0007|ff|'q'|[1, 2]|a-None|abc)j"},
        {"a recursive macro",
         R"j({%- macro py_type(spec) -%}{%- if spec.type == 'array' -%}list[{{ py_type(spec['items']) }}]{%- elif spec.type == 'object' -%}dict[str, {{ py_type(spec.additionalProperties) if spec.additionalProperties is defined else 'Any' }}]{%- elif spec.type is string -%}{{ {'string': 'str', 'integer': 'int', 'number': 'float', 'boolean': 'bool'}.get(spec.type, spec.type) }}{%- else -%}Any{%- endif -%}{%- endmacro -%}{{ py_type({'type': 'array', 'items': {'type': 'object', 'additionalProperties': {'type': 'integer'}}}) }} {{ py_type({'type': 'number'}) }} {{ py_type({}) }})j",
         R"j(list[dict[str, int]] float Any)j"},
        {"namespace lists",
         R"j({% set ns = namespace(first=true, out=[]) %}{% for m in msgs %}{% if m.role == 'user' %}{% set ns.out = ns.out + [m.content] %}{% endif %}{% if ns.first %}{% set ns.first = false %}<s>{% endif %}{% endfor %}{{ ns.out }})j",
         R"j(<s>['hi'])j"},
        {"first of a selection",
         R"j({{ msgs | selectattr('role', 'eq', 'tool') | first }}{{ (msgs | selectattr('role', 'eq', 'none') | first) is defined }}{{ msgs | map(attribute='role') | unique | list }}{{ msgs | map(attribute='x', default='-') | join }})j",
         R"j({'role': 'tool', 'content': 'r'}False['user', 'assistant', 'tool']---)j"},
        {"filters that return generators",
         R"j({{ 'yes' if msgs | selectattr('role', 'eq', 'nobody') else 'no' }}|{{ (msgs | selectattr('role', 'eq', 'nobody') | list) | length }}|{{ (msgs | map(attribute='role'))[0] }}|{{ msgs | map(attribute='role') is sequence }})j",
         R"j(yes|0||False)j"},
        {"unary minus and powers as Jinja compiles them",
         R"j({{ -1 ** n }}|{{ -2 ** 2 }}|{{ (-n) ** 2 }}|{{ (0 - 2) ** n }}|{{ 2 ** -1 }})j",
         R"j(-1|4|49|-128|0.5)j"},
        {"more methods",
         R"j({{ s.upper() }}{{ s.lower() }}{{ s.replace('l', 'L', 2) }}{{ l.index(1) }})j",
         R"j(HELLO WORLDhello worldHeLLo World1)j"},
};

} // namespace

TEST_CASE("jinja renders each construct as python3-jinja2 does", "[jinja]") {
    const auto context = nlohmann::ordered_json::parse(context_json);
    for (const auto& row : jinja2_rows) {
        INFO(row.name);
        CHECK(render(row.source, context) == row.expected);
    }
}

TEST_CASE("jinja normalizes newlines and drops one trailing newline as Jinja's lexer", "[jinja]") {
    REQUIRE(render("{{ 'x' }}\r\n{{ 'y' }}\r{{ 'z' }}\n") == "x\ny\nz");
    REQUIRE(render("a\n\n") == "a\n");
    REQUIRE(render("{% if true %}\nyes\n{% endif %}\n") == "yes\n");
}

TEST_CASE("jinja renders transformers' generation block as its content", "[jinja]") {
    REQUIRE(render("{% for i in [1, 2] %}{% generation %}{{ i }}{% endgeneration %}{% endfor %}") ==
            "12");
}

TEST_CASE("jinja keeps the key order of ordered_json and sorts that of json", "[jinja]") {
    const std::string_view source =
        "{{ d | tojson }}{% for k, v in d.items() %} {{ k }}{% endfor %}";
    const auto ordered = nlohmann::ordered_json::parse(R"({"d": {"z": 1, "a": 2}})");
    const auto sorted = nlohmann::json::parse(R"({"d": {"z": 1, "a": 2}})");
    REQUIRE(jinja_template::parse(source).render(ordered, fixed_now) == R"({"z": 1, "a": 2} z a)");
    REQUIRE(jinja_template::parse(source).render(sorted, fixed_now) == R"({"a": 2, "z": 1} a z)");
}

TEST_CASE("jinja syntax errors name the line and column", "[jinja]") {
    REQUIRE_THROWS_WITH(jinja_template::parse("line one\n{% if x %}\nunclosed"),
                        Catch::Contains("line 3") && Catch::Contains("expected 'endif'"));
    REQUIRE_THROWS_WITH(jinja_template::parse("ok\n  {{ a + }}"),
                        Catch::StartsWith("chat template line 2 column 10: "));
    REQUIRE_THROWS_WITH(jinja_template::parse("{% frobnicate %}"),
                        Catch::Contains("unknown tag 'frobnicate'"));
    REQUIRE_THROWS_AS(jinja_template::parse("{{ (1 }}"), template_syntax_error);
    REQUIRE_THROWS_AS(jinja_template::parse("{{ 'open }}"), template_syntax_error);
    REQUIRE_THROWS_AS(jinja_template::parse("{# open"), template_syntax_error);
    REQUIRE_THROWS_AS(jinja_template::parse("{% break %}"), template_syntax_error);
    REQUIRE_THROWS_AS(jinja_template::parse("{% for x in y %}{% endif %}"), template_syntax_error);
}

TEST_CASE("jinja raise_exception throws the template's message as is", "[jinja]") {
    const auto t = jinja_template::parse(
        "{% if messages[0].role != 'user' %}{{ raise_exception('Roles must alternate: ' + "
        "messages[0].role) }}{% endif %}ok");
    const auto bad = nlohmann::json::parse(R"({"messages": [{"role": "assistant"}]})");
    const auto good = nlohmann::json::parse(R"({"messages": [{"role": "user"}]})");
    REQUIRE_THROWS_AS(t.render(bad, fixed_now), template_raised);
    REQUIRE_THROWS_WITH(t.render(bad, fixed_now), "Roles must alternate: assistant");
    REQUIRE(t.render(good, fixed_now) == "ok");
}

TEST_CASE("jinja render errors: unknown filter, type errors, undefined use, sandbox", "[jinja]") {
    REQUIRE_THROWS_AS(render("{{ 'a' | frobnicate }}"), template_render_error);
    REQUIRE_THROWS_WITH(render("{{ 'a' | frobnicate }}"), Catch::Contains("frobnicate"));
    REQUIRE_THROWS_AS(render("{{ 'a' + 1 }}"), template_render_error);
    REQUIRE_THROWS_AS(render("{{ 1 / 0 }}"), template_render_error);
    REQUIRE_THROWS_AS(render("{{ missing.attr }}"), template_render_error);
    REQUIRE_THROWS_AS(render("{{ missing() }}"), template_render_error);
    REQUIRE_THROWS_AS(render("{{ missing ~ 'x' }}{{ missing + 'x' }}"), template_render_error);
    // transformers renders in an ImmutableSandboxedEnvironment: no mutating methods.
    REQUIRE_THROWS_WITH(render("{% set l = [1] %}{{ l.append(2) }}"), Catch::Contains("unsafe"));
    REQUIRE_THROWS_AS(render("{% set d = {} %}{{ d.update({'a': 1}) }}"), template_render_error);
    REQUIRE_THROWS_AS(render("{% set x = 1 %}{% set x.y = 2 %}"), template_render_error);
    // Undefined alone is quiet: empty, falsy, iterable as nothing.
    REQUIRE(render("[{{ missing }}]{% for x in missing %}x{% endfor %}{{ missing | length }}") ==
            "[]0");
}

TEST_CASE("jinja bounds loops, output, macro recursion and nesting", "[jinja]") {
    REQUIRE_THROWS_WITH(render("{% for i in range(100000000) %}{% endfor %}"),
                        Catch::Contains("iterations"));
    REQUIRE_THROWS_WITH(
        render("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(10) %}"
               "{% endfor %}{% endfor %}{% endfor %}"),
        Catch::Contains("iterations"));
    REQUIRE_THROWS_WITH(render("{{ 'x' * 100000000 }}"), Catch::Contains("bytes"));
    REQUIRE_THROWS_WITH(
        render("{% set s = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' * 4096 %}"
               "{% for i in range(2000) %}{{ s }}{% endfor %}"),
        Catch::Contains("bytes"));
    // Quadratic work within the iteration bound: copies of a large string, a growing list.
    REQUIRE_THROWS_WITH(render("{% set s = 'x' * 10000000 %}{% for i in range(100000) %}"
                               "{% set t = s %}{% endfor %}"),
                        Catch::Contains("copied"));
    REQUIRE_THROWS_WITH(render("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
                               "{% set ns.l = ns.l + [i] %}{% endfor %}"),
                        Catch::Contains("copied"));
    REQUIRE_THROWS_WITH(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
                        Catch::Contains("nested"));
    REQUIRE_THROWS_AS(jinja_template::parse("{{ " + std::string(5000, '(') + "1" +
                                            std::string(5000, ')') + " }}"),
                      template_syntax_error);
    REQUIRE_THROWS_AS(jinja_template::parse("{{ " + std::string(5000, '-') + "1 }}"),
                      template_syntax_error);
    std::string chain = "{{ 1";
    for (int n = 0; n < 5000; ++n) {
        chain += " + 1";
    }
    REQUIRE_THROWS_AS(jinja_template::parse(chain + " }}"), template_syntax_error);
    std::string nested_ifs;
    for (int n = 0; n < 5000; ++n) {
        nested_ifs += "{% if true %}";
    }
    REQUIRE_THROWS_AS(jinja_template::parse(nested_ifs), template_syntax_error);
    REQUIRE_THROWS_WITH(render("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}"
                               "{% set ns.x = [ns.x] %}{% endfor %}"),
                        Catch::Contains("nested"));
    REQUIRE_THROWS_AS(render("{% set ns = namespace() %}{% set ns.me = ns %}"),
                      template_render_error);
    REQUIRE_THROWS_AS(render("{% set ns = namespace() %}{% set ns.me = [ns] %}"),
                      template_render_error);
}

TEST_CASE("jinja strftime_now formats the given time in UTC", "[jinja]") {
    REQUIRE(render("{{ strftime_now('%d %b %Y') }}") == "06 Dec 2025");
    REQUIRE(render("{{ strftime_now('%Y-%m-%dT%H:%M:%S') }}") == "2025-12-06T05:46:40");
}

TEST_CASE("jinja templates move and render a 30-turn conversation quickly", "[jinja]") {
    auto t = jinja_template::parse(
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}");
    jinja_template moved = std::move(t);
    nlohmann::ordered_json context;
    for (int n = 0; n < 30; ++n) {
        context["messages"].push_back(
            {{"role", n % 2 ? "assistant" : "user"}, {"content", std::string(1000, 'a' + n % 26)}});
    }
    context["add_generation_prompt"] = true;
    const auto start = std::chrono::steady_clock::now();
    const std::string out = moved.render(context, fixed_now);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    WARN("30-turn render: " << took.count() << " us for " << out.size() << " bytes");
    REQUIRE(out.size() == 30 * (1000 + 1) + 15 * std::string("<|user|><|assistant|>").size() +
                              std::string("<|assistant|>").size());
}
