//! How the enums stored in `text` columns (statuses, roles, categories)
//! cross into and out of SQL: bound as text, and read back through their
//! `FromStr`, so a value the code does not know is a decode error naming the
//! value (sqlx adds the column: `error occurred while decoding column
//! "status": unknown run status "paused"`), never a silent fallback.
//!
//! The `CHECK` constraints of the schema list the same values; the enums are
//! the code's side of that contract.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

use crate::types::Category;

/// Implements sqlx's `Type`, `Encode`, `Decode` and `PgHasArrayType` for an
/// enum stored as text: `$ty` has `as_str(self) -> &'static str` and
/// `FromStr`; `$noun` names it in the decode error.
macro_rules! text_column {
    ($ty:ty, $noun:literal) => {
        impl sqlx::Type<sqlx::Postgres> for $ty {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <str as sqlx::Type<sqlx::Postgres>>::type_info()
            }
            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        impl sqlx::postgres::PgHasArrayType for $ty {
            fn array_type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::postgres::PgHasArrayType>::array_type_info()
            }
        }

        impl sqlx::Encode<'_, sqlx::Postgres> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Postgres> for $ty {
            fn decode(
                value: sqlx::postgres::PgValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
                text.parse()
                    .map_err(|_| format!(concat!("unknown ", $noun, " {:?}"), text).into())
            }
        }
    };
}

text_column!(crate::types::RunStatus, "run status");
text_column!(super::review::ReviewStatus, "review status");
text_column!(super::outbox::OutboxStatus, "outbox status");
text_column!(super::tokens::Role, "token role");
text_column!(CategoryColumn, "category");

/// A [`Category`] in a text column (`analysis_runs.category`,
/// `review_items.category`, …). A newtype because the analysis crate, which
/// owns `Category`, has no database dependency; it serialises as the bare
/// category, so JSON output is the same string as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CategoryColumn(pub Category);

/// In the API's document: one of the category names.
impl utoipa::PartialSchema for CategoryColumn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(Category::ALL.iter().map(|c| c.as_str())))
            .description(Some("The failure's category (docs/agent.md)."))
            .into()
    }
}

impl utoipa::ToSchema for CategoryColumn {
    fn name() -> std::borrow::Cow<'static, str> {
        "Category".into()
    }
}

impl CategoryColumn {
    pub fn as_str(self) -> &'static str {
        self.0.as_str()
    }
}

impl From<Category> for CategoryColumn {
    fn from(c: Category) -> Self {
        CategoryColumn(c)
    }
}

impl From<CategoryColumn> for Category {
    fn from(c: CategoryColumn) -> Self {
        c.0
    }
}

impl fmt::Display for CategoryColumn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CategoryColumn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(CategoryColumn)
    }
}
