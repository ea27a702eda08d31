//! The calculator: one tool, one agent that runs with or without a model.

use std::fmt;

use concierge::{AgentSpec, Intents, Route, Rules, Toolset, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// An arithmetic operation (variants carry no doc comments, so the schema
/// is a plain `enum` of names, which small models follow best).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Operation {
    Add,
    Subtract,
    Multiply,
    Divide,
    Sqrt,
    Abs,
}

/// The calculator's arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct CalculatorArgs {
    /// The operation: add, subtract, multiply, divide, sqrt or abs.
    pub operation: Operation,
    /// The first operand.
    pub a: f64,
    /// The second operand; leave it out for sqrt and abs.
    #[serde(default)]
    pub b: Option<f64>,
}

/// The calculator's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calculation {
    /// The value of the operation.
    pub result: f64,
    /// The calculation written out, e.g. `5 + 3 = 8`.
    pub formula: String,
}

/// Why a calculation is impossible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CalculatorError {
    /// b is zero in a division.
    DivisionByZero,
    /// a is negative in a square root.
    NegativeSquareRoot(String),
    /// A binary operation without b.
    MissingOperand(Operation),
    /// The result is not a finite number.
    NotFinite,
}

impl fmt::Display for CalculatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalculatorError::DivisionByZero => write!(f, "Cannot divide by zero. Provide a non-zero divisor b."),
            CalculatorError::NegativeSquareRoot(a) => {
                write!(f, "Cannot take the square root of a negative number ({a}).")
            }
            CalculatorError::MissingOperand(op) => {
                write!(f, "The operation {} needs a second operand b.", symbol(*op))
            }
            CalculatorError::NotFinite => write!(f, "The result is too large to represent."),
        }
    }
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn symbol(op: Operation) -> &'static str {
    match op {
        Operation::Add => "+",
        Operation::Subtract => "-",
        Operation::Multiply => "*",
        Operation::Divide => "/",
        Operation::Sqrt => "sqrt",
        Operation::Abs => "abs",
    }
}

/// Computes without the tool machinery (the tool calls this).
pub fn compute(args: &CalculatorArgs) -> Result<Calculation, CalculatorError> {
    let a = args.a;
    let binary = |op: Operation| args.b.ok_or(CalculatorError::MissingOperand(op));
    let (result, formula) = match args.operation {
        Operation::Sqrt => {
            if a < 0.0 {
                return Err(CalculatorError::NegativeSquareRoot(number(a)));
            }
            let r = a.sqrt();
            (r, format!("sqrt({}) = {}", number(a), number(r)))
        }
        Operation::Abs => {
            let r = a.abs();
            (r, format!("|{}| = {}", number(a), number(r)))
        }
        op => {
            let b = binary(op)?;
            let r = match op {
                Operation::Add => a + b,
                Operation::Subtract => a - b,
                Operation::Multiply => a * b,
                _ => {
                    if b == 0.0 {
                        return Err(CalculatorError::DivisionByZero);
                    }
                    a / b
                }
            };
            (r, format!("{} {} {} = {}", number(a), symbol(op), number(b), number(r)))
        }
    };
    if !result.is_finite() {
        return Err(CalculatorError::NotFinite);
    }
    Ok(Calculation { result, formula })
}

/// Performs a basic arithmetic operation: add, subtract, multiply, divide
/// (two operands a and b), sqrt or abs (one operand a).
#[tool(
    name = "calculator",
    category = "computation",
    read_only,
    idempotent,
    cacheable,
    provides = ["last_calculation_result"]
)]
pub async fn calculator(args: CalculatorArgs) -> Result<Calculation, CalculatorError> {
    compute(&args)
}

/// The `math` toolset: the calculator.
pub fn toolset() -> Toolset {
    Toolset::new("math").tool(Calculator)
}

/// A number a person writes: `5`, `-3`, `2.5`, `2e3`, `1.5E-2` (a named
/// capture). Thousands separators are not read: `1,000` is refused, not
/// taken for `000`.
fn number_capture(name: &str) -> String {
    format!(r"(?P<{name}>-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)")
}

/// Where a number may start: not inside a word or another number (so the
/// `3` of `2e3` is never a number of its own).
const START: &str = r"(?:^|[^\w.,])";
/// Where a number may end: not before a letter, a digit or a separator that
/// continues it (`2e + 1` and `3x` are not numbers followed by an operator).
const END: &str = r"(?:$|[^\w.,]|[.,](?:\D|$))";

/// `a OP b`: `5 + 3`, `17 plus 25`, `10 divided by 4`.
fn infix_route(operation: &str, operators: &str) -> Route {
    let (a, b) = (number_capture("a"), number_capture("b"));
    Route::tool("calculator", json!({"operation": operation, "a": "{a}", "b": "{b}"}))
        .pattern(format!(r"(?i){START}{a}\s*(?:{operators})\s*{b}{END}"))
}

/// `VERB a WORD b`, e.g. `divide 10 by 2`, `add 2 and 3`; with `swap`, the
/// second number is `a` (`subtract 3 from 10` is 10 - 3).
fn verb_route(operation: &str, verbs: &str, joiners: &str, swap: bool) -> Route {
    let (first, second) = if swap {
        (number_capture("b"), number_capture("a"))
    } else {
        (number_capture("a"), number_capture("b"))
    };
    Route::tool("calculator", json!({"operation": operation, "a": "{a}", "b": "{b}"}))
        .pattern(format!(r"(?i)\b(?:{verbs})\s+{first}\s+(?:{joiners})\s+{second}{END}"))
}

/// `WORD a`: `sqrt 16`, `square root of 16`, `sqrt(16)`.
fn unary_route(operation: &str, words: &str) -> Route {
    let a = number_capture("a");
    Route::tool("calculator", json!({"operation": operation, "a": "{a}"}))
        .pattern(format!(r"(?i)\b(?:{words})\s*(?:of\s*)?\(?\s*{a}{END}"))
}

/// How the hub recognises arithmetic: the operation words, a sum written
/// out (`5 + 3`, `10 / 4`), and "what is N ...".
pub fn intents() -> Intents {
    Intents::new()
        .keywords([
            "calculate",
            "compute",
            "plus",
            "minus",
            "times",
            "multiply",
            "divide",
            "divided by",
            "square root",
            "sqrt",
            "absolute value",
        ])
        // A minus or an x needs spaces around it, so dates (2026-11-27) and
        // sizes (3x4) are not sums.
        .pattern(r"(?i)\d(?:\s*(?:[+*/×÷−]|plus|minus|times|divided\s+by|multiplied\s+by|over)\s*|\s+[-x]\s+)-?\d")
        .pattern(r"(?i)^\s*what(?:\x27s|\s+is)\s+(?:the\s+)?(?:-?\d|square\s+root|sqrt|absolute)")
        .example("calculate 5 + 3")
        .example("what is 17 plus 25?")
        .example("square root of 16")
}

/// The calculator agent, the smallest whole agent. With a model it plans with the
/// model; without one, its rules map text such as `calculate 5 + 3` to the tool.
pub fn agent() -> AgentSpec {
    let rules = Rules::new()
        .route(unary_route("sqrt", r"sqrt|square root"))
        .route(unary_route("abs", r"abs|absolute value"))
        .route(verb_route("add", r"add|sum", r"and|to|plus", false))
        .route(verb_route("subtract", r"subtract|take", r"from|away from", true))
        .route(verb_route("multiply", r"multiply", r"by|and|times", false))
        .route(verb_route("divide", r"divide", r"by|over", false))
        .route(infix_route("add", r"\+|plus"))
        .route(infix_route("multiply", r"\*|×|x|times|multiplied by"))
        .route(infix_route("divide", r"/|÷|divided by|over"))
        .route(infix_route("subtract", r"-|−|minus"))
        .answer("{result.formula}")
        .error_answer("I could not calculate that: {error}")
        .fallback(
            "I can add, subtract, multiply, divide, and take square roots and absolute values. Try: calculate 5 + 3",
        );
    AgentSpec::new("calculator")
        .name("Calculator")
        .category("computation")
        .description("Does arithmetic: add, subtract, multiply, divide, square roots and absolute values.")
        .instructions(
            "You are a calculator assistant. For every computation, call the calculator tool: \
             operation is one of add, subtract, multiply, divide, sqrt, abs; a is the first number; \
             b is the second number (leave it out for sqrt and abs). Then answer with the result in one short sentence.",
        )
        .starter_prompt("Hi! I can do arithmetic for you. Try: calculate 5 + 3")
        .example("what is 17 plus 25?", "17 + 25 = 42")
        .tool("calculator")
        .intents(intents())
        .rules(rules)
        .temperature(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(operation: Operation, a: f64, b: Option<f64>) -> Result<Calculation, CalculatorError> {
        compute(&CalculatorArgs { operation, a, b })
    }

    #[test]
    fn operations() {
        assert_eq!(run(Operation::Add, 5.0, Some(3.0)).unwrap().formula, "5 + 3 = 8");
        assert_eq!(run(Operation::Subtract, 5.0, Some(7.5)).unwrap().result, -2.5);
        assert_eq!(run(Operation::Multiply, 6.0, Some(7.0)).unwrap().result, 42.0);
        assert_eq!(run(Operation::Divide, 1.0, Some(4.0)).unwrap().formula, "1 / 4 = 0.25");
        assert_eq!(run(Operation::Sqrt, 16.0, None).unwrap().formula, "sqrt(16) = 4");
        assert_eq!(run(Operation::Abs, -3.0, None).unwrap().result, 3.0);
    }

    #[test]
    fn errors_are_clear() {
        assert_eq!(
            run(Operation::Divide, 1.0, Some(0.0)),
            Err(CalculatorError::DivisionByZero)
        );
        let e = run(Operation::Sqrt, -4.0, None).unwrap_err();
        assert_eq!(e.to_string(), "Cannot take the square root of a negative number (-4).");
        assert!(matches!(
            run(Operation::Add, 1.0, None),
            Err(CalculatorError::MissingOperand(Operation::Add))
        ));
        assert_eq!(
            run(Operation::Multiply, 1e308, Some(10.0)),
            Err(CalculatorError::NotFinite)
        );
    }

    #[test]
    fn the_schema_is_what_a_model_needs() {
        let spec = concierge::Tool::spec(&Calculator);
        assert_eq!(spec.name, "calculator");
        assert!(spec.description.starts_with("Performs a basic arithmetic operation"));
        assert_eq!(spec.category.as_deref(), Some("computation"));
        assert!(spec.annotations.read_only && spec.annotations.cacheable && spec.annotations.idempotent);
        assert_eq!(spec.provides, ["last_calculation_result"]);
        let schema = &spec.input_schema;
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["properties"]["operation"]["enum"],
            json!(["add", "subtract", "multiply", "divide", "sqrt", "abs"])
        );
        assert_eq!(schema["required"], json!(["operation", "a"]));
        assert!(schema.get("$defs").is_none() && schema.get("$schema").is_none());
    }
}
