//! Where settings come from, and the one loader that reads them.

use std::{collections::BTreeMap, fmt};

use serde::de::{self, DeserializeOwned, Visitor, value::MapDeserializer};

use super::ConfigError;

/// The variables settings are read from: the process environment, or
/// pairs a test gives. A blank value is no value (unset), for every
/// setting.
#[derive(Clone, Default)]
pub struct Source {
    vars: BTreeMap<String, String>,
}

impl Source {
    /// The process environment. A variable whose name or value is not
    /// UTF-8 is unset, as for `std::env::var`.
    pub fn env() -> Self {
        std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect()
    }

    /// The value of `name`, unless it is unset or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Sets `name` (blank unsets it): a caller that overrides one variable.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        if value.trim().is_empty() {
            self.vars.remove(&name);
        } else {
            self.vars.insert(name, value);
        }
    }

    /// Reads `T` from the variables whose names start with `prefix`: each
    /// serde field name of `T` is the rest of a variable's name (`MODEL`
    /// reads `LLM_MODEL` with the prefix `LLM_`, `FAULTLINE_BIND` reads
    /// itself with none). Missing fields take `T`'s serde defaults; a value
    /// that does not parse is a [`ConfigError`] naming its variable.
    pub fn load<T: DeserializeOwned>(&self, prefix: &str) -> Result<T, ConfigError> {
        let fields = self
            .vars
            .iter()
            .filter_map(|(name, value)| Some((name.strip_prefix(prefix)?, value.as_str())));
        let vars = MapDeserializer::<_, de::value::Error>::new(fields);
        serde_path_to_error::deserialize(vars).map_err(|e| {
            let name = format!("{prefix}{}", e.path());
            let value = self.get(&name).unwrap_or_default().to_string();
            ConfigError::new(name, value, e.into_inner().to_string())
        })
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Source {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Self {
        let mut source = Source::default();
        for (name, value) in pairs {
            source.set(name, value);
        }
        source
    }
}

/// Names only: values may be secrets.
impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

/// The variables [`Source::load`] reads for `T` with `prefix`: `T`'s serde
/// field names (skipped fields are not read), each after `prefix`.
pub fn variables<T: DeserializeOwned>(prefix: &str) -> Vec<String> {
    let fields = match T::deserialize(FieldNames) {
        Err(Fields(fields)) => fields,
        Ok(_) => &[],
    };
    fields.iter().map(|f| format!("{prefix}{f}")).collect()
}

/// A deserializer that only asks a struct for its field names.
struct FieldNames;

/// What [`FieldNames`] found: a struct's fields, or none.
#[derive(Debug)]
struct Fields(&'static [&'static str]);

impl fmt::Display for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fields {:?}", self.0)
    }
}

impl std::error::Error for Fields {}

impl de::Error for Fields {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Fields(&[])
    }
}

impl<'de> de::Deserializer<'de> for FieldNames {
    type Error = Fields;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Fields> {
        Err(Fields(fields))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Fields> {
        Err(Fields(&[]))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(default)]
    struct Example {
        #[serde(rename = "COUNT", deserialize_with = "crate::config::de::parsed")]
        count: u32,
        #[serde(rename = "NAME")]
        name: String,
        #[serde(skip)]
        derived: bool,
    }

    impl Default for Example {
        fn default() -> Self {
            Self {
                count: 7,
                name: "none".into(),
                derived: true,
            }
        }
    }

    #[test]
    fn fields_are_read_under_the_prefix_and_blank_is_unset() {
        let source: Source = [("APP_COUNT", " 3 "), ("APP_NAME", "  "), ("COUNT", "9")]
            .into_iter()
            .collect();
        let read: Example = source.load("APP_").unwrap();
        assert_eq!(
            read,
            Example {
                count: 3,
                name: "none".into(),
                derived: true
            }
        );
        assert_eq!(source.load::<Example>("").unwrap().count, 9);
        assert_eq!(source.get("APP_NAME"), None);
    }

    #[test]
    fn a_bad_value_names_its_variable_with_the_prefix() {
        let source: Source = [("APP_COUNT", "many")].into_iter().collect();
        let err = source.load::<Example>("APP_").unwrap_err();
        assert_eq!(err.name, "APP_COUNT");
        assert_eq!(
            err.to_string(),
            "invalid value \"many\" for APP_COUNT: invalid digit found in string"
        );
    }

    #[test]
    fn the_variables_are_the_deserialized_field_names() {
        assert_eq!(variables::<Example>("APP_"), ["APP_COUNT", "APP_NAME"]);
    }

    #[test]
    fn values_do_not_print() {
        let source: Source = [("TOKEN", "hunter2")].into_iter().collect();
        assert_eq!(format!("{source:?}"), "{\"TOKEN\"}");
    }
}
